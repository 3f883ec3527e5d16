#include "graph/list_index_build.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "graph/btree.h"
#include "graph/graph_tx.h"
#include "graph/layout.h"

namespace farm::graph {
namespace {

constexpr int kAttempts = 3;
// New tree nodes written per transaction (kTreeNodeBytes each).
constexpr size_t kNodesPerTx = 12;
// A list longer than this many blocks is taken for a cycle.
constexpr size_t kMaxBlocks = size_t{1} << 24;

struct Snapshot {
  bool nothing_to_do = false;
  uint64_t changes = 0;
  Addr hint;
  std::vector<TreeEntry> by_id2;  // sorted after the read
  std::vector<TreeEntry> by_key;  // in list order: ascending
};

Task<absl::StatusOr<Snapshot>> ReadSnapshot(TxScope& s, int64_t id1, int64_t type) {
  Snapshot out;
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  const ListHead* list = vertex->object != nullptr ? vertex->v.FindList(type) : nullptr;
  if (list == nullptr || list->indexed() || list->head.is_null()) {
    out.nothing_to_do = true;
    co_return out;
  }
  out.changes = list->changes;
  out.hint = vertex->object->ptr().addr;
  out.by_id2.reserve(list->count);
  size_t blocks = 0;
  for (FatPtr p = list->head; !p.is_null(); ++blocks) {
    if (blocks >= kMaxBlocks) co_return absl::InternalError("corrupt graph list: a cycle");
    absl::StatusOr<ObjBuf*> object = co_await TxRead(s.tx, p);
    if (!object.ok()) co_return object.status();
    FatPtr next;
    EdgeView last;
    bool any = false;
    absl::Status st = ForEachEdge((*object)->data(), &next, [&](const EdgeView& e) {
      out.by_id2.push_back(TreeEntry{Id2Key(e.id2), TreeValue{static_cast<uint64_t>(e.time), 0}});
      last = e;
      any = true;
      return true;
    });
    if (!st.ok()) co_return st;
    if (!any) co_return absl::InternalError("corrupt graph list: an empty block");
    out.by_key.push_back(TreeEntry{ListKey(last.time, last.id2), TreeValue::Of(p)});
    p = next;
  }
  co_return out;
}

// Writes a tree holding `entries` (sorted, unique) bottom up; its root. Every node made
// is added to `made` (to free them if the tree is not used).
Task<absl::StatusOr<FatPtr>> WriteTree(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                       const TreeShape& shape, Addr hint, std::vector<TreeEntry> entries,
                                       std::vector<FatPtr>& made) {
  uint8_t level = 0;
  while (true) {
    const uint16_t capacity = level == 0 ? shape.leaf_capacity() : shape.internal_capacity();
    // Leaves keep an eighth free for the inserts that follow.
    const size_t fill = std::max<size_t>(level == 0 ? capacity - capacity / 8 : capacity, 2);
    std::vector<std::vector<TreeEntry>> nodes;
    for (size_t at = 0; at < entries.size() || nodes.empty(); at += fill) {
      const size_t end = std::min(entries.size(), at + fill);
      nodes.emplace_back(entries.begin() + static_cast<ptrdiff_t>(std::min(at, end)),
                         entries.begin() + static_cast<ptrdiff_t>(end));
    }
    std::vector<TreeEntry> parents;
    for (size_t first = 0; first < nodes.size(); first += kNodesPerTx) {
      const size_t last = std::min(nodes.size(), first + kNodesPerTx);
      absl::StatusOr<std::vector<FatPtr>> written = co_await RunTx<std::vector<FatPtr>>(
          ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<std::vector<FatPtr>>> {
            std::vector<FatPtr> out;
            for (size_t n = first; n < last; ++n) {
              absl::StatusOr<FatPtr> p = co_await TxTree::WriteNewNode(s.tx, shape, level, nodes[n], hint);
              if (!p.ok()) co_return p.status();
              out.push_back(*p);
            }
            co_return out;
          });
      if (!written.ok()) co_return written.status();
      for (size_t n = first; n < last; ++n) {
        made.push_back((*written)[n - first]);
        // A node's separator is its largest key (any key for the last: unbounded).
        const TreeKey separator = nodes[n].empty() ? TreeKey{} : nodes[n].back().key;
        parents.push_back(TreeEntry{separator, TreeValue::Of((*written)[n - first])});
      }
    }
    if (parents.size() == 1) co_return parents.front().value.ptr();
    entries = std::move(parents);
    ++level;
  }
}

Task<absl::Status> FreeNodes(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                             const std::vector<FatPtr>& nodes) {
  for (size_t first = 0; first < nodes.size(); first += 256) {
    const size_t last = std::min(nodes.size(), first + 256);
    absl::StatusOr<bool> freed = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<bool>> {
      for (size_t n = first; n < last; ++n) {
        if (absl::Status st = txFree(s.tx, nodes[n]); !st.ok()) co_return st;
      }
      co_return true;
    });
    if (!freed.ok()) co_return freed.status();
  }
  co_return absl::OkStatus();
}

}  // namespace

Task<absl::Status> BuildListIndex(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                  int64_t id1, int64_t type, ListIndexTuning tuning) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    absl::StatusOr<Snapshot> snapshot = co_await RunTx<Snapshot>(
        ctx, index, stats, [&](TxScope& s) { return ReadSnapshot(s, id1, type); });
    if (!snapshot.ok()) co_return snapshot.status();
    if (snapshot->nothing_to_do) co_return absl::OkStatus();
    std::sort(snapshot->by_id2.begin(), snapshot->by_id2.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.key < b.key; });
    for (size_t i = 1; i < snapshot->by_id2.size(); ++i) {
      if (snapshot->by_id2[i - 1].key == snapshot->by_id2[i].key) {
        co_return absl::InternalError("corrupt graph list: an id2 twice");
      }
    }
    std::vector<FatPtr> made;
    absl::StatusOr<FatPtr> by_id2 = co_await WriteTree(ctx, index, stats, tuning.id2_shape(), snapshot->hint,
                                                       std::move(snapshot->by_id2), made);
    absl::StatusOr<FatPtr> by_key = by_id2.ok() ? co_await WriteTree(ctx, index, stats, tuning.key_shape(),
                                                                     snapshot->hint, std::move(snapshot->by_key), made)
                                                : by_id2;
    absl::StatusOr<bool> linked = false;
    if (!by_key.ok()) {
      linked = by_key.status();
    } else {
      linked = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<bool>> {
        absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
        if (!vertex.ok()) co_return vertex.status();
        ListHead* list = vertex->object != nullptr ? vertex->v.FindList(type) : nullptr;
        if (list == nullptr || list->indexed() || list->changes != snapshot->changes) co_return false;
        list->by_id2 = *by_id2;
        list->by_key = *by_key;
        if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
        co_return true;
      });
    }
    if (linked.ok() && *linked) {
      ++stats->index_builds;
      co_return absl::OkStatus();
    }
    if (absl::Status st = co_await FreeNodes(ctx, index, stats, made); !st.ok()) co_return st;
    if (!linked.ok()) co_return linked.status();
  }
  co_return absl::OkStatus();
}

}  // namespace farm::graph
