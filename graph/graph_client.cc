#include "graph/graph_client.h"

#include <algorithm>
#include <coroutine>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/bulk_load.h"
#include "graph/chunks.h"
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

template <typename T, typename Done>
void Finish(Task<absl::StatusOr<T>> task, Done done) {
  Spawn(std::move(task), std::move(done));
}

template <typename T, typename Done>
void Fail(Context& ctx, absl::Status s, Done done) {
  ctx.Defer([s, done = std::move(done)]() mutable { done(absl::StatusOr<T>(s)); });
}

Task<absl::StatusOr<bool>> UpdateNodeTask(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                          Node node) {
  absl::StatusOr<std::vector<FatPtr>> chunks =
      co_await WriteNodeChunks(ctx, index, stats, node.data, VertexHome(*index, node.id));
  if (!chunks.ok()) co_return chunks.status();
  absl::StatusOr<bool> updated = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) {
    return UpdateNodeTx(s, node, *chunks);
  });
  if (!updated.ok() || !*updated) (void)co_await FreeNodeChunks(ctx, index, stats, std::move(*chunks));
  co_return updated;
}

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
    case ShipOp::kIndexList:
    case ShipOp::kTakeNodeIds:
    case ShipOp::kResetNodeIds:
      co_return absl::InternalError("this operation runs in GraphClient::ExecuteAndIndex");
    case ShipOp::kPutNodes:
      co_return co_await ExecutePutNodes(ctx, index, stats, r);
    case ShipOp::kLoadLists:
      co_return co_await ExecuteLoadLists(ctx, index, stats, r);
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
// shipped transactions of at most kMaxShippedEdgeBytes of edges (a load's steps:
// kMaxShippedLoadEdgeBytes).
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
    const uint32_t limit = token != 0 ? kMaxShippedLoadEdgeBytes : kMaxShippedEdgeBytes;
    while (at < links.size() && (r.links.empty() || bytes + kEdgeHeaderBytes + links[at].data.size() <= limit)) {
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
  // A LoadLinks with no links ends a load sent in smaller calls (LINK.LOAD's from a RESP
  // client, each at most a few hundred links).
  const bool load_ended = load != 0 && links.empty();
  if ((token != 0 && links.size() > kIndexAfterLoadLinks) || load_ended) {
    // The load appended the whole list unindexed: it gets its indexes now, if it is long,
    // as part of the load — not from the first request that walks it (seconds for a hub
    // of a million links, and the vertex's other updates wait behind it). A failed build
    // is retried by that request.
    ShipRequest r{ShipOp::kIndexList, id1, type};
    absl::StatusOr<ShipReply> indexed = co_await ShipAwait(*self, r);
    if (!indexed.ok()) {
      FARM_LOG(kWarning, "graph: the indexes of the list (%d, %d) were not built after its load: %s", id1, type,
               indexed.status().ToString());
    }
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
  Finish(AddNodesTask(*this, &stats_, std::move(nodes)), std::move(done));
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
  ShipRequest r;
  r.op = ShipOp::kResetNodeIds;
  r.start_id = start_id;
  Ship(std::move(r), [done = std::move(done)](absl::StatusOr<ShipReply> reply) mutable { done(reply.status()); });
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

void GraphClient::LoadLinkLists(std::vector<LinkList> lists, uint64_t load, Done<absl::StatusOr<uint64_t>> done) {
  for (LinkList& list : lists) {
    for (Link& l : list.links) {
      l.id1 = list.id1;
      l.type = list.type;
      if (absl::Status s = CheckLink(l); !s.ok()) return Fail<uint64_t>(ctx_, s, std::move(done));
    }
  }
  Finish(LoadListsTask(*this, std::move(lists), load | 1), std::move(done));
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
  const bool ids = request.op == ShipOp::kTakeNodeIds || request.op == ShipOp::kResetNodeIds;
  const Addr target = ids ? index_client_.UpdateTarget(kNextNodeIdKey) : VertexHome(*index_, request.id1);
  const int64_t id1 = request.id1, type = request.type;
  msgSend(ctx_, target, kGraphShipMsgId, EncodeShipRequest(request),
          [id1, type, done = std::move(done)](absl::StatusOr<std::string> reply) mutable {
            if (!reply.ok()) return done(reply.status());
            done(DecodeShipReply(*reply, id1, type));
          });
}

void GraphClient::Execute(ShipRequest request, Done<absl::StatusOr<ShipReply>> done) {
  if (request.op != ShipOp::kAddLinks && request.op != ShipOp::kDeleteLink) {
    return Finish(ExecuteAndIndex(this, std::move(request)), std::move(done));
  }
  auto [queue, idle] = writing_.try_emplace(request.id1);
  if (!idle) {
    queue->second.push_back(QueuedWrite{std::move(request), std::move(done)});
    return;
  }
  RunVertexWrite(std::move(request), std::move(done), /*combine=*/true);
}

namespace {

// A link update that can share a transaction with others of its vertex: a delete, or an
// upsert of one link that is not a load's step.
bool Combinable(const ShipRequest& r) {
  return r.op == ShipOp::kDeleteLink || (r.op == ShipOp::kAddLinks && r.links.size() == 1 && r.token == 0);
}

LinkUpdate UpdateOf(const ShipRequest& r) {
  LinkUpdate u;
  u.remove = r.op == ShipOp::kDeleteLink;
  u.expunge = r.expunge;
  if (u.remove) {
    u.link.id2 = r.id2;
  } else {
    u.link = r.links[0];
  }
  u.link.id1 = r.id1;
  u.link.type = r.type;
  return u;
}

}  // namespace

void GraphClient::RunVertexWrite(ShipRequest request, Done<absl::StatusOr<ShipReply>> done, bool combine) {
  const int64_t id1 = request.id1;
  std::deque<QueuedWrite>& queue = writing_.at(id1);
  if (combine && Combinable(request) && !queue.empty() && Combinable(queue.front().request)) {
    std::vector<QueuedWrite> batch;
    batch.push_back(QueuedWrite{std::move(request), std::move(done)});
    while (batch.size() < kMaxCombinedUpdates && !queue.empty() && Combinable(queue.front().request)) {
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    Spawn(CombinedWrite(this, std::move(batch)),
          [this, id1](absl::StatusOr<bool> whole) { NextVertexWrite(id1, /*combine=*/whole.ok() && *whole); });
    return;
  }
  Finish(ExecuteAndIndex(this, std::move(request)),
         [this, id1, done = std::move(done)](absl::StatusOr<ShipReply> reply) mutable {
           done(std::move(reply));
           NextVertexWrite(id1, /*combine=*/true);
         });
}

void GraphClient::NextVertexWrite(int64_t id1, bool combine) {
  auto queue = writing_.find(id1);
  if (queue->second.empty()) {
    writing_.erase(queue);
    return;
  }
  // From the loop, not from inside the continuation that called this (no recursion
  // through operations that finish at once).
  ctx_.Defer([this, combine, next = std::move(queue->second.front())]() mutable {
    RunVertexWrite(std::move(next.request), std::move(next.done), combine);
  });
  queue->second.pop_front();
}

Task<absl::StatusOr<bool>> GraphClient::CombinedWrite(GraphClient* self, std::vector<QueuedWrite> batch) {
  const int64_t id1 = batch[0].request.id1;
  std::vector<LinkUpdate> updates;
  updates.reserve(batch.size());
  for (const QueuedWrite& w : batch) updates.push_back(UpdateOf(w.request));
  size_t carried = 0;  // the updates the last attempt's transaction took
  absl::StatusOr<LinkUpdatesResult> result = co_await RunTx<LinkUpdatesResult>(
      self->ctx_, self->index_, &self->stats_,
      [&](TxScope& s) -> Task<absl::StatusOr<LinkUpdatesResult>> {
        carried = 0;
        absl::StatusOr<LinkUpdatesResult> r = co_await LinkUpdatesTx(s, id1, updates, kMaxCombinedWriteBytes);
        if (r.ok()) carried = r->answers.size();
        co_return r;
      },
      &self->combined_commit_for_test_);
  // A commit that may have happened answers every update it carried with its error:
  // run again, an update would be applied twice, or answered as if another's effect
  // were its own (an upsert "not new", a delete "not found").
  const bool unknown = !result.ok() && carried > 0 && MayHaveCommitted(result.status());
  const size_t taken = result.ok() ? result->answers.size() : unknown ? carried : 0;
  // What the transaction did not take goes back to the front of the queue, in order:
  // all of it when it failed for sure (then the first runs alone, and meets its own
  // error).
  std::deque<QueuedWrite>& queue = self->writing_.at(id1);
  for (size_t i = batch.size(); i-- > taken;) queue.push_front(std::move(batch[i]));
  if (taken == 0) co_return false;
  if (unknown) {
    for (size_t i = 0; i < taken; ++i) batch[i].done(result.status());
    co_return true;
  }
  // As ExecuteAndIndex: a list found long and unindexed gets its indexes before the
  // answers (once per list).
  std::vector<int64_t> indexed;
  for (size_t i = 0; i < taken; ++i) {
    const int64_t type = updates[i].link.type;
    if (result->walked[i] <= self->tuning_.min_blocks ||
        std::find(indexed.begin(), indexed.end(), type) != indexed.end()) {
      continue;
    }
    indexed.push_back(type);
    absl::StatusOr<bool> built = co_await BuildIndexOnce(self, id1, type, 0);
    if (!built.ok()) {
      FARM_LOG(kWarning, "graph: the indexes of the list (%d, %d) were not built: %s", id1, type,
               built.status().ToString());
    }
  }
  for (size_t i = 0; i < taken; ++i) {
    ShipReply reply;
    reply.op = batch[i].request.op;
    if (updates[i].remove) {
      reply.found = result->answers[i];
    } else {
      reply.added = result->answers[i] ? 1 : 0;
      reply.applied = 1;
    }
    batch[i].done(std::move(reply));
  }
  co_return true;
}

// A build of one list's indexes running on a thread, and the operations waiting for
// its result (they resume, in order, on the same thread once it has one).
struct IndexBuild {
  std::vector<std::coroutine_handle<>> waiters;
  absl::StatusOr<bool> result = false;
};

namespace {

class AwaitIndexBuild {
 public:
  explicit AwaitIndexBuild(IndexBuild& build) : build_(build) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { build_.waiters.push_back(h); }
  void await_resume() const noexcept {}

 private:
  IndexBuild& build_;
};

}  // namespace

Task<absl::StatusOr<bool>> GraphClient::BuildIndexOnce(GraphClient* self, int64_t id1, int64_t type,
                                                       uint32_t min_blocks) {
  const std::pair<int64_t, int64_t> list{id1, type};
  if (auto running = self->building_.find(list); running != self->building_.end()) {
    std::shared_ptr<IndexBuild> build = running->second;
    co_await AwaitIndexBuild(*build);
    co_return build->result;
  }
  auto build = std::make_shared<IndexBuild>();
  self->building_.emplace(list, build);
  build->result =
      co_await BuildListIndex(self->ctx_, self->index_, &self->stats_, id1, type, self->tuning_, min_blocks);
  self->building_.erase(list);
  for (std::coroutine_handle<> waiter : build->waiters) self->ctx_.Defer([waiter] { waiter.resume(); });
  co_return build->result;
}

// A list the operation found long and unindexed gets its indexes before the reply (so
// a caller that has its answer has no work of this client in flight).
// kIndexList (the end of a load) builds them if the list is long, and answers after.
Task<absl::StatusOr<ShipReply>> GraphClient::ExecuteAndIndex(GraphClient* self, ShipRequest r) {
  if (r.op == ShipOp::kTakeNodeIds) {
    absl::StatusOr<int64_t> first = co_await self->ids_.Take(self->ctx_, self->index_client_, r.count);
    if (!first.ok()) co_return first.status();
    ShipReply reply;
    reply.op = r.op;
    reply.first_id = *first;
    co_return reply;
  }
  if (r.op == ShipOp::kResetNodeIds) {
    absl::Status reset = co_await self->ids_.Reset(self->ctx_, self->index_, &self->stats_, r.start_id);
    if (!reset.ok()) co_return reset;
    ShipReply reply;
    reply.op = r.op;
    co_return reply;
  }
  if (r.op == ShipOp::kIndexList) {
    absl::StatusOr<bool> indexed = co_await BuildIndexOnce(self, r.id1, r.type, self->tuning_.min_blocks);
    if (!indexed.ok()) co_return indexed.status();
    ShipReply reply;
    reply.op = ShipOp::kIndexList;
    reply.indexed = *indexed;
    co_return reply;
  }
  uint32_t walked = 0;
  absl::StatusOr<ShipReply> reply = co_await ExecuteTask(self->ctx_, self->index_, &self->stats_, r, &walked);
  if (!reply.ok() || walked <= self->tuning_.min_blocks) co_return reply;
  absl::StatusOr<bool> built = co_await BuildIndexOnce(self, r.id1, r.type, 0);
  if (!built.ok()) {
    FARM_LOG(kWarning, "graph: the indexes of the list (%d, %d) were not built: %s", r.id1, r.type,
             built.status().ToString());
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
