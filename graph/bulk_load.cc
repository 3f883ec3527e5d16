#include "graph/bulk_load.h"

#include <algorithm>
#include <coroutine>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "graph/chunks.h"
#include "graph/graph_client.h"
#include "graph/graph_tx.h"
#include "graph/index.h"
#include "graph/join_all.h"
#include "graph/layout.h"

namespace farm::graph {
namespace {

// Nodes whose chunks AddNodesTask writes at once (each node's chunks one after another,
// a transaction each).
constexpr size_t kChunkedNodesAtOnce = 16;

// co_await LoadAloneAwait(client, list, load) -> StatusOr<uint64_t>: GraphClient::LoadLinks.
class LoadAloneAwait {
 public:
  LoadAloneAwait(GraphClient& client, LinkList list, uint64_t load)
      : client_(client), list_(std::move(list)), load_(load) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    client_.LoadLinks(list_.id1, list_.type, std::move(list_.links), load_, [this, h](absl::StatusOr<uint64_t> r) {
      result_ = std::move(r);
      h.resume();
    });
  }
  absl::StatusOr<uint64_t> await_resume() { return std::move(result_); }

 private:
  GraphClient& client_;
  LinkList list_;
  uint64_t load_;
  absl::StatusOr<uint64_t> result_ = absl::UnknownError("not completed");
};

// One shipped request of a bulk write; its reply's count added to *added.
Task<absl::Status> ShipCounted(GraphClient& client, ShipRequest request, uint64_t* added) {
  absl::StatusOr<ShipReply> reply = co_await ShipAwait(client, std::move(request));
  if (!reply.ok()) co_return reply.status();
  *added += reply->added;
  co_return absl::OkStatus();
}

Task<absl::Status> LoadAlone(GraphClient& client, LinkList list, uint64_t load, uint64_t* added) {
  absl::StatusOr<uint64_t> n = co_await LoadAloneAwait(client, std::move(list), load);
  if (!n.ok()) co_return n.status();
  *added += *n;
  co_return absl::OkStatus();
}

// Requests of one op, one open per region of the ids' index entries, each up to
// kMaxShippedLoadBytes: Add returns the request the next item (of `bytes`) goes into.
class RequestsByRegion {
 public:
  explicit RequestsByRegion(ShipOp op, uint64_t token) : op_(op), token_(token) {}
  ShipRequest& Add(Addr home, int64_t id, uint64_t bytes) {
    auto [it, fresh] = open_.try_emplace(home.region(), requests_.size());
    if (!fresh && bytes_[it->second] + bytes > kMaxShippedLoadBytes) {
      it->second = requests_.size();
      fresh = true;
    }
    if (fresh) {
      ShipRequest& r = requests_.emplace_back();
      r.op = op_;
      r.id1 = id;  // routes the request to the region's machine (messages.h)
      r.token = token_;
      bytes_.push_back(32);
    }
    bytes_[it->second] += bytes;
    return requests_[it->second];
  }
  std::vector<ShipRequest>& requests() { return requests_; }

 private:
  const ShipOp op_;
  const uint64_t token_;
  absl::flat_hash_map<uint32_t, size_t> open_;  // region -> its open request
  std::vector<ShipRequest> requests_;
  std::vector<uint64_t> bytes_;
};

// Items by the address of their index entries: a request's transactions, which take
// consecutive items (Parts), then touch buckets of disjoint ranges, and transactions
// run at once conflict only at the ranges' ends.
void SortByHome(std::vector<std::pair<Addr, size_t>>& order) {
  std::sort(order.begin(), order.end(), [](const std::pair<Addr, size_t>& a, const std::pair<Addr, size_t>& b) {
    return a.first.raw() < b.first.raw();
  });
}

// What a new node adds to its transaction's commit record: its vertex object as
// StoreVertex allocates it (VertexAllocBytes: room for two lists), stored with its
// header and line versions, and the id index's insert (up to two adjacent buckets).
uint64_t NewNodeCommitBytes(const kv::ShardMap& index, const Node& node, size_t chunks) {
  Vertex v;
  v.has_node = true;
  if (chunks == 0) {
    v.inline_data = node.data;
  } else {
    v.chunks.resize(chunks);
  }
  return objStoredBytes(VertexAllocBytes(v)) + 2 * objStoredBytes(index.layout().bucket_bytes());
}

// What a list's first load step adds to its commit record, about: its block (sized for
// it) and its vertex written back.
uint64_t NewListCommitBytes(const LinkList& list) {
  uint32_t bytes = kBlockHeaderBytes;
  for (const Link& l : list.links) bytes += kEdgeHeaderBytes + static_cast<uint32_t>(l.data.size());
  return objStoredBytes(BlockAllocBytes(bytes)) + objStoredBytes(512);
}

// [begin, end) ranges of items in order, each of at most `max_items` and about
// `budget` estimated bytes (a single item over it alone), never ending between two
// items of one home bucket (`home(i)`): transactions run at once would both write it.
template <typename Estimate, typename Home>
std::vector<std::pair<size_t, size_t>> Parts(size_t n, Estimate estimate, Home home, uint64_t budget,
                                             size_t max_items) {
  std::vector<std::pair<size_t, size_t>> parts;
  for (size_t at = 0; at < n;) {
    size_t end = at;
    uint64_t bytes = 0;
    while (end < n) {
      const bool same_home = end > at && home(end) == home(end - 1);
      const uint64_t b = estimate(end);
      if (!same_home && end > at && (end - at >= max_items || bytes + b > budget)) break;
      bytes += b;
      ++end;
    }
    parts.emplace_back(at, end);
    at = end;
  }
  return parts;
}

// How many items a bulk write's next attempt may take: all that fit at first, after a
// conflict half as many as the failed attempt took (at least one), so a transaction
// that keeps meeting locks held by others (each held across a replicated commit)
// shrinks until it gets through, instead of retrying its whole read set until the
// retry budget runs out. RunTx calls its op once per attempt: Next there, Took once the
// op knows how many it took.
class Shrinking {
 public:
  size_t Next() {
    if (retry_) limit_ = std::max<size_t>(1, took_ / 2);
    retry_ = true;
    return limit_;
  }
  void Took(size_t n) { took_ = n; }
  // After a commit: the next transaction may take all again.
  void Committed() {
    retry_ = false;
    limit_ = SIZE_MAX;
  }

 private:
  bool retry_ = false;
  size_t limit_ = SIZE_MAX;
  size_t took_ = 0;
};

// Nodes of one part, as many per transaction as PutNodesTx fits under the budget,
// until every one is written; on a failure the chunks of the nodes not written are
// freed.
Task<absl::Status> PutNodesPart(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                absl::Span<const Node> nodes, absl::Span<const std::vector<FatPtr>> chunks) {
  size_t at = 0;
  absl::Status failed;
  Shrinking size;
  while (at < nodes.size()) {
    absl::StatusOr<size_t> put = co_await RunTx<size_t>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<size_t>> {
      const size_t n = std::min(size.Next(), nodes.size() - at);
      absl::StatusOr<size_t> took = co_await PutNodesTx(s, nodes.subspan(at, n), kMaxLoadBytesPerTx, chunks.subspan(at, n));
      if (took.ok()) size.Took(*took);
      co_return took;
    });
    if (!put.ok()) {
      failed = put.status();
      break;
    }
    size.Committed();
    at += *put;
  }
  // A commit whose outcome is unknown may have written nodes with their chunks: those
  // leak rather than dangle.
  if (failed.ok() || absl::IsUnavailable(failed) || absl::IsDeadlineExceeded(failed)) co_return failed;
  std::vector<FatPtr> left;
  for (size_t i = at; i < chunks.size(); ++i) left.insert(left.end(), chunks[i].begin(), chunks[i].end());
  (void)co_await FreeNodeChunks(ctx, index, stats, std::move(left));
  co_return failed;
}

// Upserts of one list (a load's step declined it), a transaction per AddLinksTx prefix.
Task<absl::Status> UpsertList(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                              const LinkList& list, uint64_t* added) {
  const absl::Span<const Link> links(list.links);
  for (size_t at = 0; at < links.size();) {
    absl::StatusOr<AddLinksResult> r = co_await RunTx<AddLinksResult>(ctx, index, stats, [&](TxScope& s) {
      return AddLinksTx(s, list.id1, list.type, links.subspan(at));
    });
    if (!r.ok()) co_return r.status();
    if (r->applied == 0 || r->applied > links.size() - at) co_return absl::InternalError("AddLinksTx applied no link");
    *added += r->added;
    at += r->applied;
  }
  co_return absl::OkStatus();
}

// Lists of one part, as many per transaction as LoadListsTx fits under the budget; the
// lists it declined are upserted afterwards.
Task<absl::Status> LoadListsPart(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                 absl::Span<const LinkList> lists, uint64_t token, uint64_t* added) {
  std::vector<size_t> declined;
  Shrinking size;
  for (size_t at = 0; at < lists.size();) {
    absl::StatusOr<LoadListsResult> r =
        co_await RunTx<LoadListsResult>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<LoadListsResult>> {
          const size_t n = std::min(size.Next(), lists.size() - at);
          absl::StatusOr<LoadListsResult> took = co_await LoadListsTx(s, lists.subspan(at, n), token, kMaxLoadBytesPerTx);
          if (took.ok()) size.Took(took->taken);
          co_return took;
        });
    if (!r.ok()) co_return r.status();
    size.Committed();
    *added += r->added;
    for (size_t d : r->declined) declined.push_back(at + d);
    at += r->taken;
  }
  for (size_t d : declined) {
    if (absl::Status st = co_await UpsertList(ctx, index, stats, lists[d], added); !st.ok()) co_return st;
  }
  co_return absl::OkStatus();
}

// Writes the chunks of a node's `data` (chunks.h) into `out`.
Task<absl::Status> WriteChunksInto(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                   const std::string& data, Addr hint, std::vector<FatPtr>* out) {
  absl::StatusOr<std::vector<FatPtr>> written = co_await WriteNodeChunks(ctx, index, stats, data, hint);
  if (!written.ok()) co_return written.status();
  *out = std::move(*written);
  co_return absl::OkStatus();
}

}  // namespace

Task<absl::StatusOr<int64_t>> AddNodesTask(GraphClient& client, ClientStats* stats, std::vector<Node> nodes) {
  Context& ctx = client.ctx();
  const std::shared_ptr<const kv::ShardMap> index = client.index_map();
  std::vector<std::vector<FatPtr>> chunks(nodes.size());
  absl::Status failed;
  // The chunks of the nodes whose data is not inline, kChunkedNodesAtOnce nodes at once.
  std::vector<Task<absl::Status>> writes;
  for (size_t i = 0; i < nodes.size() && failed.ok(); ++i) {
    if (nodes[i].data.size() > kMaxInlineNodeData) {
      // The node's id is not known yet: spread the chunks over the index's shards (a
      // compute-only member has no memory of its own to put them in).
      const kv::Shard& shard = index->shards()[absl::HashOf(nodes[i].data, i) % index->shards().size()];
      writes.push_back(WriteChunksInto(ctx, index, stats, nodes[i].data, shard.first, &chunks[i]));
    }
    if (writes.size() == kChunkedNodesAtOnce || (i + 1 == nodes.size() && !writes.empty())) {
      failed = co_await JoinAll(std::move(writes));
      writes.clear();
    }
  }
  absl::StatusOr<int64_t> first = absl::UnknownError("no ids yet");
  if (failed.ok()) {
    ShipRequest take;
    take.op = ShipOp::kTakeNodeIds;
    take.count = nodes.size();
    absl::StatusOr<ShipReply> taken = co_await ShipAwait(client, std::move(take));
    first = taken.ok() ? absl::StatusOr<int64_t>(taken->first_id) : taken.status();
  } else {
    first = failed;
  }
  if (!first.ok()) {
    for (std::vector<FatPtr>& c : chunks) (void)co_await FreeNodeChunks(ctx, index, stats, std::move(c));
    co_return first;
  }
  // From here the executors own the chunks (they free those of nodes they fail to write).
  std::vector<std::pair<Addr, size_t>> order(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].id = *first + static_cast<int64_t>(i);
    order[i] = {VertexHome(*index, nodes[i].id), i};
  }
  SortByHome(order);
  RequestsByRegion requests(ShipOp::kPutNodes, 0);
  for (const auto& [home, i] : order) {
    ShipRequest& r = requests.Add(home, nodes[i].id, ShippedNodeBytes(nodes[i], chunks[i].size()));
    r.nodes.push_back(std::move(nodes[i]));
    r.chunks.push_back(std::move(chunks[i]));
  }
  uint64_t written = 0;
  std::vector<Task<absl::Status>> ships;
  for (ShipRequest& r : requests.requests()) ships.push_back(ShipCounted(client, std::move(r), &written));
  if (absl::Status st = co_await JoinAll(std::move(ships)); !st.ok()) co_return st;
  if (written != nodes.size()) {
    co_return absl::InternalError(absl::StrCat("wrote ", written, " of ", nodes.size(), " nodes"));
  }
  co_return first;
}

Task<absl::StatusOr<uint64_t>> LoadListsTask(GraphClient& client, std::vector<LinkList> lists, uint64_t load) {
  const kv::ShardMap& index = *client.index_map();
  uint64_t added = 0;
  std::vector<Task<absl::Status>> tasks;
  std::vector<std::pair<Addr, size_t>> order;
  absl::flat_hash_set<int64_t> id2s;
  for (size_t i = 0; i < lists.size(); ++i) {
    LinkList& list = lists[i];
    if (list.links.empty()) continue;
    id2s.clear();
    bool repeats = false;
    for (const Link& l : list.links) repeats = !id2s.insert(l.id2).second || repeats;
    if (repeats || ShippedListBytes(list) > kMaxListedLoadEdgeBytes) {
      tasks.push_back(LoadAlone(client, std::move(list), load, &added));
      continue;
    }
    std::stable_sort(list.links.begin(), list.links.end(),
                     [](const Link& a, const Link& b) { return EdgeBefore(a.time, a.id2, b.time, b.id2); });
    order.emplace_back(VertexHome(index, list.id1), i);
  }
  SortByHome(order);
  RequestsByRegion requests(ShipOp::kLoadLists, load);
  for (const auto& [home, i] : order) {
    requests.Add(home, lists[i].id1, ShippedListBytes(lists[i])).lists.push_back(std::move(lists[i]));
  }
  for (ShipRequest& r : requests.requests()) tasks.push_back(ShipCounted(client, std::move(r), &added));
  if (absl::Status st = co_await JoinAll(std::move(tasks)); !st.ok()) co_return st;
  co_return added;
}

Task<absl::StatusOr<ShipReply>> ExecutePutNodes(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                                ClientStats* stats, const ShipRequest& r) {
  const absl::Span<const Node> nodes(r.nodes);
  const absl::Span<const std::vector<FatPtr>> chunks(r.chunks);
  if (chunks.size() != nodes.size()) co_return absl::InvalidArgumentError("kPutNodes: a chunk list per node");
  std::vector<Task<absl::Status>> parts;
  for (auto [begin, end] : Parts(
           nodes.size(), [&](size_t i) { return NewNodeCommitBytes(*index, nodes[i], chunks[i].size()); },
           [&](size_t i) { return VertexHome(*index, nodes[i].id); }, kMaxLoadBytesPerTx, kMaxNodesPerTx)) {
    parts.push_back(
        PutNodesPart(ctx, index, stats, nodes.subspan(begin, end - begin), chunks.subspan(begin, end - begin)));
  }
  if (absl::Status st = co_await JoinAll(std::move(parts)); !st.ok()) co_return st;
  ShipReply reply;
  reply.op = r.op;
  reply.added = nodes.size();
  co_return reply;
}

Task<absl::StatusOr<ShipReply>> ExecuteLoadLists(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                                 ClientStats* stats, const ShipRequest& r) {
  const absl::Span<const LinkList> lists(r.lists);
  if (r.token == 0) co_return absl::InvalidArgumentError("kLoadLists: a load token");
  ShipReply reply;
  reply.op = r.op;
  std::vector<Task<absl::Status>> parts;
  for (auto [begin, end] :
       Parts(
           lists.size(), [&](size_t i) { return NewListCommitBytes(lists[i]); },
           [&](size_t i) { return VertexHome(*index, lists[i].id1); }, kMaxLoadBytesPerTx, SIZE_MAX)) {
    parts.push_back(LoadListsPart(ctx, index, stats, lists.subspan(begin, end - begin), r.token, &reply.added));
  }
  if (absl::Status st = co_await JoinAll(std::move(parts)); !st.ok()) co_return st;
  co_return reply;
}

}  // namespace farm::graph
