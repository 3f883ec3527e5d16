#include "graph/graph_client.h"

#include <algorithm>
#include <coroutine>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/index.h"
#include "kv/layout.h"
#include "farm/api/coro.h"
#include "graph/graph_tx.h"
#include "graph/list_index_build.h"
#include "farm/api/log.h"
#include "graph/run_tx.h"
#include "graph/layout.h"
#include "graph/memory_graph.h"

namespace farm::graph {
namespace {

// Node data over kMaxInlineNodeData as chunk objects, one transaction each, near `hint`
// (a storage member's address); empty for data that stays inline.
Task<absl::StatusOr<std::vector<FatPtr>>> WriteChunks(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                                      ClientStats* stats, const std::string& data, Addr hint) {
  std::vector<FatPtr> chunks;
  if (data.size() <= kMaxInlineNodeData) co_return chunks;
  for (size_t at = 0; at < data.size(); at += kChunkDataBytes) {
    const std::string chunk = EncodeChunk(absl::string_view(data).substr(at, kChunkDataBytes));
    absl::StatusOr<FatPtr> ptr = co_await RunTx<FatPtr>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<FatPtr>> {
      absl::StatusOr<ObjBuf*> object = co_await TxAlloc(s.tx, static_cast<uint32_t>(chunk.size()), hint);
      if (!object.ok()) co_return object.status();
      std::copy(chunk.begin(), chunk.end(), (*object)->data().begin());
      if (absl::Status st = txWrite(s.tx, *object); !st.ok()) co_return st;
      co_return (*object)->ptr();
    });
    if (!ptr.ok()) co_return ptr.status();
    chunks.push_back(*ptr);
  }
  co_return chunks;
}

// Frees chunks no node took (its transaction failed).
Task<absl::Status> FreeChunks(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                              std::vector<FatPtr> chunks) {
  if (chunks.empty()) co_return absl::OkStatus();
  absl::StatusOr<bool> freed = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<bool>> {
    for (const FatPtr& c : chunks) {
      if (absl::Status st = txFree(s.tx, c); !st.ok()) co_return st;
    }
    co_return true;
  });
  co_return freed.status();
}

template <typename T, typename Done>
void Finish(Task<absl::StatusOr<T>> task, Done done) {
  Spawn(std::move(task), std::move(done));
}

template <typename T, typename Done>
void Fail(Context& ctx, absl::Status s, Done done) {
  ctx.Defer([s, done = std::move(done)]() mutable { done(absl::StatusOr<T>(s)); });
}

// co_await JoinAll(tasks) -> the first error: runs the tasks at once (spawned on this
// thread) and resumes when every one has finished.
class JoinAll {
 public:
  explicit JoinAll(std::vector<Task<absl::Status>> tasks) : tasks_(std::move(tasks)) {}
  bool await_ready() const noexcept { return tasks_.empty(); }
  bool await_suspend(std::coroutine_handle<> h) {
    state_->waiter = h;
    state_->left = tasks_.size() + 1;  // +1 until every task is spawned
    for (Task<absl::Status>& t : tasks_) {
      Spawn(std::move(t), [state = state_](absl::Status s) {
        if (!s.ok() && state->error.ok()) state->error = s;
        if (--state->left == 0) state->waiter.resume();
      });
    }
    return --state_->left != 0;  // all done already (never, as continuations are deferred)
  }
  absl::Status await_resume() { return state_->error; }

 private:
  struct State {
    std::coroutine_handle<> waiter;
    size_t left = 0;
    absl::Status error;
  };
  std::vector<Task<absl::Status>> tasks_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Nodes at ids first, first+1, ... (a part of AddNodes' batch): as many per transaction
// as PutNodesTx fits under kMaxNodeBytesPerTx, until every one is written. The chunks
// of the nodes a transaction committed are theirs: their vectors are emptied, so that
// what is left in `chunks` after a failure is what no node took.
Task<absl::Status> PutNodesPart(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                int64_t first, absl::Span<const Node> nodes,
                                absl::Span<std::vector<FatPtr>> chunks) {
  for (size_t at = 0; at < nodes.size();) {
    const absl::Span<const std::vector<FatPtr>> rest =
        chunks.empty() ? absl::Span<const std::vector<FatPtr>>() : absl::Span<const std::vector<FatPtr>>(chunks).subspan(at);
    absl::StatusOr<size_t> put = co_await RunTx<size_t>(ctx, index, stats, [&](TxScope& s) {
      return PutNodesTx(s, first + static_cast<int64_t>(at), nodes.subspan(at), GraphClient::kMaxNodeBytesPerTx, rest);
    });
    if (!put.ok()) co_return put.status();
    for (size_t i = at; i < at + *put && !chunks.empty(); ++i) chunks[i].clear();
    at += *put;
  }
  co_return absl::OkStatus();
}

// AddNodes: chunks first, then one transaction for the nodes.
// co_await ReserveNodeIds(index, n) -> StatusOr<int64_t>: the first of n consecutive
// node ids, taken by an increment of the id counter shipped to its primary (combined
// there with the others: no conflicts, whatever the number of writers).
class ReserveNodeIds {
 public:
  ReserveNodeIds(kv::TableClient& index, uint64_t n) : index_(index), n_(n) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    index_.Update(kv::OpKind::kIncrement, kNextNodeIdKey, "", static_cast<int64_t>(n_),
                  [this, h](absl::StatusOr<kv::KeyOpResult> r) {
                    if (!r.ok()) {
                      result_ = r.status();
                    } else if (!r->status.ok()) {
                      result_ = r->status;
                    } else {
                      result_ = r->number - static_cast<int64_t>(n_) + 1;
                    }
                    h.resume();
                  });
  }
  absl::StatusOr<int64_t> await_resume() { return std::move(result_); }

 private:
  kv::TableClient& index_;
  uint64_t n_;
  absl::StatusOr<int64_t> result_ = absl::UnknownError("not completed");
};

// What a new node adds to its transaction's commit record: its vertex object as
// StoreVertex allocates it (VertexAllocBytes: room for two lists), stored with its
// header and line versions, and the id index's insert (up to two adjacent buckets).
uint64_t NewNodeCommitBytes(const kv::ShardMap& index, const Node& node) {
  Vertex v;
  v.has_node = true;
  if (node.data.size() <= kMaxInlineNodeData) {
    v.inline_data = node.data;
  } else {
    v.chunks.resize((node.data.size() + kChunkDataBytes - 1) / kChunkDataBytes);
  }
  return objStoredBytes(VertexAllocBytes(v)) + 2 * objStoredBytes(index.layout().bucket_bytes());
}

// Ids first (a failure after it leaves a gap, as an auto-increment does), then the
// nodes: in one transaction when they fit one commit record, else in several at once,
// each at most kMaxNodesPerTx nodes and kMaxNodeBytesPerTx of NewNodeCommitBytes (a
// single node over it alone).
Task<absl::StatusOr<int64_t>> AddNodesTask(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                           kv::TableClient* ids, std::vector<Node> nodes) {
  std::vector<std::vector<FatPtr>> chunks(nodes.size());
  bool any = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    // The node's id is not known yet: spread the chunks over the index's shards (a
    // compute-only member has no memory of its own to put them in).
    const kv::Shard& shard = index->shards()[absl::HashOf(nodes[i].data, i) % index->shards().size()];
    absl::StatusOr<std::vector<FatPtr>> c = co_await WriteChunks(ctx, index, stats, nodes[i].data, shard.first);
    if (!c.ok()) co_return c.status();  // (chunks written so far leak; see README)
    chunks[i] = std::move(*c);
    any = any || !chunks[i].empty();
  }
  std::vector<uint64_t> commit_bytes(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) commit_bytes[i] = NewNodeCommitBytes(*index, nodes[i]);
  absl::StatusOr<int64_t> first = co_await ReserveNodeIds(*ids, nodes.size());
  if (first.ok()) {
    // Parts of about one transaction each (by NewNodeCommitBytes), written at once.
    std::vector<Task<absl::Status>> parts;
    for (size_t at = 0; at < nodes.size();) {
      size_t end = at;
      uint64_t part = 0;
      while (end < nodes.size() && end - at < GraphClient::kMaxNodesPerTx &&
             (end == at || part + commit_bytes[end] <= GraphClient::kMaxNodeBytesPerTx)) {
        part += commit_bytes[end];
        ++end;
      }
      parts.push_back(PutNodesPart(ctx, index, stats, *first + static_cast<int64_t>(at),
                                   absl::MakeConstSpan(nodes).subspan(at, end - at),
                                   any ? absl::MakeSpan(chunks).subspan(at, end - at) : absl::Span<std::vector<FatPtr>>()));
      at = end;
    }
    absl::Status put = parts.size() == 1 ? co_await std::move(parts[0]) : co_await JoinAll(std::move(parts));
    if (!put.ok()) first = put;
  }
  if (!first.ok()) {
    for (std::vector<FatPtr>& c : chunks) (void)co_await FreeChunks(ctx, index, stats, std::move(c));
  }
  co_return first;
}

Task<absl::StatusOr<bool>> UpdateNodeTask(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                          Node node) {
  absl::StatusOr<std::vector<FatPtr>> chunks =
      co_await WriteChunks(ctx, index, stats, node.data, VertexHome(*index, node.id));
  if (!chunks.ok()) co_return chunks.status();
  absl::StatusOr<bool> updated = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) {
    return UpdateNodeTx(s, node, *chunks);
  });
  if (!updated.ok() || !*updated) (void)co_await FreeChunks(ctx, index, stats, std::move(*chunks));
  co_return updated;
}

// co_await ShipAwait(client, request) -> StatusOr<ShipReply>.
class ShipAwait {
 public:
  ShipAwait(GraphClient& client, ShipRequest request) : client_(client), request_(std::move(request)) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    client_.Ship(std::move(request_), [this, h](absl::StatusOr<ShipReply> r) {
      result_ = std::move(r);
      h.resume();
    });
  }
  absl::StatusOr<ShipReply> await_resume() { return std::move(result_); }

 private:
  GraphClient& client_;
  ShipRequest request_;
  absl::StatusOr<ShipReply> result_ = absl::UnknownError("not completed");
};

// A shipped operation, run here.
// `walked`: the blocks of an unindexed list the operation read whole (graph_tx.h).
Task<absl::StatusOr<ShipReply>> ExecuteTask(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                            ClientStats* stats, const ShipRequest& r, uint32_t* walked) {
  ShipReply reply;
  reply.op = r.op;
  switch (r.op) {
    case ShipOp::kAddLinks: {
      absl::StatusOr<AddLinksResult> added = co_await RunTx<AddLinksResult>(ctx, index, stats, [&](TxScope& s) {
        return AddLinksTx(s, r.id1, r.type, r.links, walked);
      });
      if (!added.ok()) co_return added.status();
      reply.added = added->added;
      reply.applied = added->applied;
      break;
    }
    case ShipOp::kLoadLinks: {
      absl::StatusOr<std::optional<uint64_t>> added = co_await RunTx<std::optional<uint64_t>>(
          ctx, index, stats, [&](TxScope& s) { return LoadLinksTx(s, r.id1, r.type, r.token, r.links); });
      if (!added.ok()) co_return added.status();
      reply.appended = added->has_value();
      reply.added = added->value_or(0);
      break;
    }
    case ShipOp::kDeleteLink: {
      absl::StatusOr<bool> found = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) {
        return DeleteLinkTx(s, r.id1, r.type, r.id2, r.expunge, walked);
      });
      if (!found.ok()) co_return found.status();
      reply.found = *found;
      break;
    }
    case ShipOp::kGetLinks: {
      absl::StatusOr<std::vector<Link>> links = co_await RunTx<std::vector<Link>>(ctx, index, stats, [&](TxScope& s) {
        return GetLinksTx(s, r.id1, r.type, r.id2s, walked);
      });
      if (!links.ok()) co_return links.status();
      reply.links = std::move(*links);
      break;
    }
    case ShipOp::kGetLinkList: {
      if (absl::Status st = CheckRange(r.range); !st.ok()) co_return st;
      absl::StatusOr<std::vector<Link>> page = co_await RunTx<std::vector<Link>>(ctx, index, stats, [&](TxScope& s) {
        return GetLinkListTx(s, r.range);
      });
      if (!page.ok()) co_return page.status();
      uint64_t bytes = 0;
      for (const Link& l : *page) bytes += kEdgeHeaderBytes + l.data.size();
      if (bytes > kMaxShippedReplyBytes) co_return absl::ResourceExhaustedError("the page is too large to ship");
      reply.links = std::move(*page);
      break;
    }
  }
  co_return reply;
}

}  // namespace

// AddLinks: newest first (unless an id2 repeats: then in the caller's order), in
// shipped transactions of at most kMaxShippedEdgeBytes of edges.
Task<absl::StatusOr<uint64_t>> GraphClient::AddLinksTask(GraphClient* self, int64_t id1, int64_t type,
                                                         std::vector<Link> links, uint64_t load) {
  absl::flat_hash_set<int64_t> id2s;
  bool repeats = false;
  for (const Link& l : links) repeats = repeats || !id2s.insert(l.id2).second;
  if (!repeats) {
    std::stable_sort(links.begin(), links.end(),
                     [](const Link& a, const Link& b) { return EdgeBefore(a.time, a.id2, b.time, b.id2); });
  }
  // A load (more than one transaction's worth of distinct links) appends to the list's
  // tail while nothing else changes it (graph_tx.h, LoadLinksTx).
  uint64_t token = 0;
  if (!repeats && !links.empty()) {
    uint64_t bytes = 0;
    for (const Link& l : links) bytes += kEdgeHeaderBytes + l.data.size();
    if (load != 0) {
      token = load;
    } else if (bytes > kMaxShippedEdgeBytes) {
      token = (reinterpret_cast<uintptr_t>(&links) ^ absl::ToUnixNanos(absl::Now())) | 1;
    }
  }
  uint64_t added = 0;
  for (size_t at = 0; at < links.size();) {
    ShipRequest r{token != 0 ? ShipOp::kLoadLinks : ShipOp::kAddLinks, id1, type, {}, 0, false, {}, {}, token};
    uint32_t bytes = 0;
    const size_t first = at;
    while (at < links.size() && (r.links.empty() || bytes + kEdgeHeaderBytes + links[at].data.size() <= kMaxShippedEdgeBytes)) {
      bytes += kEdgeHeaderBytes + static_cast<uint32_t>(links[at].data.size());
      r.links.push_back(links[at++]);
    }
    absl::StatusOr<ShipReply> reply = co_await ShipAwait(*self, r);
    if (!reply.ok()) co_return reply.status();
    if (token != 0 && !reply->appended) {
      // Someone else changed the list: the rest goes by upserts.
      token = 0;
      at = first;
      continue;
    }
    if (token == 0) {
      if (reply->applied == 0 || reply->applied > r.links.size()) {
        co_return absl::InternalError("a shipped AddLinks applied no link");
      }
      at = first + reply->applied;  // the rest goes in the next transaction
    }
    added += reply->added;
  }
  co_return added;
}

void GraphClient::AddNode(Node node, Done<absl::StatusOr<int64_t>> done) {
  std::vector<Node> nodes;
  nodes.push_back(std::move(node));
  AddNodes(std::move(nodes), std::move(done));
}

void GraphClient::AddNodes(std::vector<Node> nodes, Done<absl::StatusOr<int64_t>> done) {
  if (nodes.empty()) return Fail<int64_t>(ctx_, absl::InvalidArgumentError("no nodes to add"), std::move(done));
  for (const Node& n : nodes) {
    if (absl::Status s = CheckNode(n); !s.ok()) return Fail<int64_t>(ctx_, s, std::move(done));
  }
  Finish(AddNodesTask(ctx_, index_, &stats_, &index_client_, std::move(nodes)), std::move(done));
}

void GraphClient::GetNode(int64_t id, int32_t type, Done<absl::StatusOr<std::optional<Node>>> done) {
  Finish(reader_.GetNode(id, type), std::move(done));
}

void GraphClient::UpdateNode(Node node, Done<absl::StatusOr<bool>> done) {
  if (absl::Status s = CheckNode(node); !s.ok()) return Fail<bool>(ctx_, s, std::move(done));
  Finish(UpdateNodeTask(ctx_, index_, &stats_, std::move(node)), std::move(done));
}

void GraphClient::DeleteNode(int64_t id, int32_t type, Done<absl::StatusOr<bool>> done) {
  Finish(RunTx<bool>(ctx_, index_, &stats_, [id, type](TxScope& s) { return DeleteNodeTx(s, id, type); }),
         std::move(done));
}

void GraphClient::ResetNodeIds(int64_t start_id, Done<absl::Status> done) {
  Spawn(RunTx<bool>(ctx_, index_, &stats_,
                    [start_id](TxScope& s) -> Task<absl::StatusOr<bool>> {
                      absl::Status st = co_await ResetNodeIdsTx(s, start_id);
                      if (!st.ok()) co_return st;
                      co_return true;
                    }),
        [done = std::move(done)](absl::StatusOr<bool> r) mutable { done(r.status()); });
}

void GraphClient::AddLink(Link link, Done<absl::StatusOr<bool>> done) {
  const int64_t id1 = link.id1, type = link.type;
  std::vector<Link> links;
  links.push_back(std::move(link));
  AddLinks(id1, type, std::move(links), [done = std::move(done)](absl::StatusOr<uint64_t> added) mutable {
    if (!added.ok()) return done(added.status());
    done(*added == 1);
  });
}

void GraphClient::AddLinks(int64_t id1, int64_t type, std::vector<Link> links, Done<absl::StatusOr<uint64_t>> done) {
  for (Link& l : links) {
    l.id1 = id1;
    l.type = type;
    if (absl::Status s = CheckLink(l); !s.ok()) return Fail<uint64_t>(ctx_, s, std::move(done));
  }
  Finish(AddLinksTask(this, id1, type, std::move(links), 0), std::move(done));
}

void GraphClient::LoadLinks(int64_t id1, int64_t type, std::vector<Link> links, uint64_t load,
                            Done<absl::StatusOr<uint64_t>> done) {
  for (Link& l : links) {
    l.id1 = id1;
    l.type = type;
    if (absl::Status s = CheckLink(l); !s.ok()) return Fail<uint64_t>(ctx_, s, std::move(done));
  }
  Finish(AddLinksTask(this, id1, type, std::move(links), load | 1), std::move(done));
}

void GraphClient::DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge, Done<absl::StatusOr<bool>> done) {
  ShipRequest r{ShipOp::kDeleteLink, id1, type, {}, id2, expunge, {}};
  Ship(std::move(r), [done = std::move(done)](absl::StatusOr<ShipReply> reply) mutable {
    if (!reply.ok()) return done(reply.status());
    done(reply->found);
  });
}

void GraphClient::GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s,
                           Done<absl::StatusOr<std::vector<Link>>> done) {
  Finish(GetLinksTask(this, id1, type, std::vector<int64_t>(id2s.begin(), id2s.end())), std::move(done));
}

// Up to kMaxGetLinksPerRead id2s in one shipped read (their reply fits a message).
Task<absl::StatusOr<std::vector<Link>>> GraphClient::GetLinksTask(GraphClient* self, int64_t id1, int64_t type,
                                                                  std::vector<int64_t> id2s) {
  std::vector<Link> found;
  absl::flat_hash_set<int64_t> asked;
  std::vector<int64_t> unique;
  for (int64_t id2 : id2s) {
    if (asked.insert(id2).second) unique.push_back(id2);
  }
  for (size_t at = 0; at < unique.size() || (at == 0 && unique.empty()); at += kMaxGetLinksPerRead) {
    const size_t end = std::min(unique.size(), at + kMaxGetLinksPerRead);
    ShipRequest r{ShipOp::kGetLinks, id1, type, {}, 0, false, std::vector<int64_t>(unique.begin() + at, unique.begin() + end)};
    absl::StatusOr<ShipReply> reply = co_await ShipAwait(*self, std::move(r));
    if (!reply.ok()) co_return reply.status();
    for (Link& l : reply->links) found.push_back(std::move(l));
    if (unique.empty()) break;
  }
  co_return found;
}

void GraphClient::Ship(ShipRequest request, Done<absl::StatusOr<ShipReply>> done) {
  const Addr target = VertexHome(*index_, request.id1);
  const int64_t id1 = request.id1, type = request.type;
  msgSend(ctx_, target, kGraphShipMsgId, EncodeShipRequest(request),
          [id1, type, done = std::move(done)](absl::StatusOr<std::string> reply) mutable {
            if (!reply.ok()) return done(reply.status());
            done(DecodeShipReply(*reply, id1, type));
          });
}

void GraphClient::Execute(ShipRequest request, Done<absl::StatusOr<ShipReply>> done) {
  Finish(ExecuteAndIndex(this, std::move(request)), std::move(done));
}

// A list the operation found long and unindexed gets its indexes before the reply (so
// a caller that has its answer has no work of this client in flight); one build per
// list at a time on this thread.
Task<absl::StatusOr<ShipReply>> GraphClient::ExecuteAndIndex(GraphClient* self, ShipRequest r) {
  uint32_t walked = 0;
  absl::StatusOr<ShipReply> reply = co_await ExecuteTask(self->ctx_, self->index_, &self->stats_, r, &walked);
  if (!reply.ok() || walked <= self->tuning_.min_blocks) co_return reply;
  const std::pair<int64_t, int64_t> list{r.id1, r.type};
  if (!self->building_.insert(list).second) co_return reply;
  absl::Status built = co_await BuildListIndex(self->ctx_, self->index_, &self->stats_, r.id1, r.type, self->tuning_);
  self->building_.erase(list);
  if (!built.ok()) {
    FARM_LOG(kWarning, "graph: the indexes of the list (%d, %d) were not built: %s", r.id1, r.type,
             built.ToString());
  }
  co_return reply;
}

void GraphClient::ReadList(int64_t id1, int64_t type, Done<absl::StatusOr<ListSnapshot>> done) {
  Finish(RunTx<ListSnapshot>(ctx_, index_, &stats_, [=](TxScope& s) { return ReadListTx(s, id1, type); }),
         std::move(done));
}

void GraphClient::GetLinkList(LinkRange range, Done<absl::StatusOr<std::vector<Link>>> done) {
  Finish(GetLinkListTask(this, range), std::move(done));
}

// Lock-free first; a page that keeps changing under its READs is read by a transaction
// on the list's machine (local reads: a short window); a page too large to ship back
// goes on lock-free, with backoff.
Task<absl::StatusOr<std::vector<Link>>> GraphClient::GetLinkListTask(GraphClient* self, LinkRange range) {
  absl::StatusOr<std::vector<Link>> page = co_await self->reader_.GetLinkList(range, kLockFreePageAttempts);
  if (!absl::IsAborted(page.status())) co_return page;
  ++self->stats_.shipped_pages;
  ShipRequest r{ShipOp::kGetLinkList, range.id1, range.type, {}, 0, false, {}, range};
  absl::StatusOr<ShipReply> reply = co_await ShipAwait(*self, std::move(r));
  if (reply.ok()) co_return std::move(reply->links);
  if (!absl::IsResourceExhausted(reply.status())) co_return reply.status();
  co_return co_await self->reader_.GetLinkList(range);
}

void GraphClient::CountLinks(int64_t id1, int64_t type, Done<absl::StatusOr<uint64_t>> done) {
  Finish(reader_.CountLinks(id1, type), std::move(done));
}

}  // namespace farm::graph
