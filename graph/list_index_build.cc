#include "graph/list_index_build.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "graph/btree.h"
#include "graph/graph_tx.h"
#include "graph/layout.h"

namespace farm::graph {
namespace {

// How long a build's lease holds its list's writers from its last renewal (a build of
// a list of a million links takes about 0.3 s on a quiet machine, several seconds on a
// loaded one: KeepBuildLease renews it between the build's transactions).
constexpr absl::Duration kLease = absl::Seconds(2);
// KeepBuildLease renews a lease that has less than this left.
constexpr absl::Duration kRenewBelow = absl::Seconds(1);
// New tree nodes written per transaction (kTreeNodeBytes each).
constexpr size_t kNodesPerTx = 12;
// A list longer than this many blocks is taken for a cycle.
constexpr size_t kMaxBlocks = size_t{1} << 24;

// A part of the list read by one transaction: the vertex (whose list's `changes` tell
// whether the list changed since the first part) and up to `blocks_per_read` blocks from
// `from` (the head when null). Parts whose transactions each saw the same `changes`
// together read one state of the list: every change of it writes the vertex.
struct SnapshotPart {
  bool nothing_to_do = false;  // no such list, an empty one, or indexed already
  bool changed = false;        // `changes` differ from the first part's
  uint64_t changes = 0;
  Addr hint;
  std::vector<TreeEntry> by_id2;
  std::vector<TreeEntry> by_key;  // in list order: ascending
  FatPtr next;                    // where the next part starts (null: the list ended)
};

Task<absl::StatusOr<SnapshotPart>> ReadSnapshotPart(TxScope& s, int64_t id1, int64_t type, FatPtr from,
                                                    std::optional<uint64_t> changes, uint32_t blocks_per_read) {
  SnapshotPart out;
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  const ListHead* list = vertex->object != nullptr ? vertex->v.FindList(type) : nullptr;
  if (list == nullptr || list->indexed() || list->head.is_null()) {
    out.nothing_to_do = true;
    co_return out;
  }
  out.changes = list->changes;
  out.hint = vertex->object->ptr().addr;
  if (changes.has_value() && *changes != list->changes) {
    out.changed = true;
    co_return out;
  }
  FatPtr p = from.is_null() ? list->head : from;
  for (size_t blocks = 0; !p.is_null() && blocks < std::max<uint32_t>(blocks_per_read, 1); ++blocks) {
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
  out.next = p;
  co_return out;
}

struct Snapshot {
  bool nothing_to_do = false;
  bool changed = false;
  bool lost = false;  // the build lost its lease
  uint64_t changes = 0;
  Addr hint;
  std::vector<TreeEntry> by_id2;  // sorted after the read
  std::vector<TreeEntry> by_key;
};

// The whole list, part by part (SnapshotPart), keeping the build's lease; `lost` when
// the build lost it (the snapshot is then incomplete).
Task<absl::StatusOr<Snapshot>> ReadSnapshot(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                            ClientStats* stats, BuildLease* lease, uint32_t blocks_per_read,
                                            absl::Duration pause) {
  const int64_t id1 = lease->id1;
  const int64_t type = lease->type;
  Snapshot out;
  std::optional<uint64_t> changes;
  FatPtr from;
  for (size_t parts = 0;; ++parts) {
    if (parts >= kMaxBlocks) co_return absl::InternalError("corrupt graph list: a cycle");
    absl::StatusOr<bool> kept = co_await KeepBuildLease(ctx, index, stats, lease);
    if (!kept.ok()) co_return kept.status();
    if (!*kept) {
      out.lost = true;
      co_return out;
    }
    absl::StatusOr<SnapshotPart> part = co_await RunTx<SnapshotPart>(ctx, index, stats, [&](TxScope& s) {
      return ReadSnapshotPart(s, id1, type, from, changes, blocks_per_read);
    });
    if (!part.ok()) co_return part.status();
    out.nothing_to_do = part->nothing_to_do;
    out.changed = part->changed;
    if (part->nothing_to_do || part->changed) co_return out;
    changes = out.changes = part->changes;
    out.hint = part->hint;
    out.by_id2.insert(out.by_id2.end(), part->by_id2.begin(), part->by_id2.end());
    out.by_key.insert(out.by_key.end(), part->by_key.begin(), part->by_key.end());
    if (part->next.is_null()) co_return out;
    from = part->next;
    if (pause > absl::ZeroDuration()) co_await SleepFor(ctx, pause);
  }
}

// Writes a tree holding `entries` (sorted, unique) bottom up, keeping the build's lease;
// its root, or null when the build lost its lease. Every node made is added to `made`
// (to free them if the tree is not used).
Task<absl::StatusOr<FatPtr>> WriteTree(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                       BuildLease* lease, const TreeShape& shape, Addr hint,
                                       std::vector<TreeEntry> entries, std::vector<FatPtr>& made) {
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
      absl::StatusOr<bool> kept = co_await KeepBuildLease(ctx, index, stats, lease);
      if (!kept.ok()) co_return kept.status();
      if (!*kept) co_return FatPtr();
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

// What TakeLease found: the lease's end when the build took it, or none: no such list,
// an empty one, one of at most `min_blocks` blocks, one indexed already (`indexed`), or
// one another build holds.
struct Lease {
  std::optional<uint32_t> lease;
  bool indexed = false;
};

// Takes the list's build lease (ListHead::build_lease) unless a build holds it.
Task<absl::StatusOr<Lease>> TakeLease(TxScope& s, int64_t id1, int64_t type, uint32_t min_blocks) {
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  ListHead* list = vertex->object != nullptr ? vertex->v.FindList(type) : nullptr;
  const absl::Time now = absl::Now();
  if (list != nullptr && list->indexed()) co_return Lease{std::nullopt, true};
  if (list == nullptr || list->head.is_null() || list->blocks <= min_blocks || BuildLeaseHeld(*list, now)) {
    co_return Lease();
  }
  list->build_lease = static_cast<uint32_t>(absl::ToUnixSeconds(now + kLease)) + 1;
  if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  co_return Lease{list->build_lease, false};
}

// Ends the build: links the trees (when given, the list unchanged since `changes` and
// the lease still ours) and releases the lease; whether the trees were linked.
Task<absl::StatusOr<bool>> EndBuild(TxScope& s, int64_t id1, int64_t type, uint32_t lease, uint64_t changes,
                                    std::optional<std::pair<FatPtr, FatPtr>> roots) {
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  ListHead* list = vertex->object != nullptr ? vertex->v.FindList(type) : nullptr;
  if (list == nullptr || list->build_lease != lease) co_return false;  // lost it (it ran out)
  list->build_lease = 0;
  const bool link = roots.has_value() && !list->indexed() && list->changes == changes;
  if (link) {
    list->by_id2 = roots->first;
    list->by_key = roots->second;
  }
  if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  co_return link;
}

}  // namespace

Task<absl::StatusOr<bool>> BuildListIndex(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                          ClientStats* stats, int64_t id1, int64_t type, ListIndexTuning tuning,
                                          uint32_t min_blocks) {
  absl::StatusOr<Lease> taken =
      co_await RunTx<Lease>(ctx, index, stats, [&](TxScope& s) { return TakeLease(s, id1, type, min_blocks); });
  if (!taken.ok()) co_return taken.status();
  if (!taken->lease.has_value()) co_return taken->indexed;
  BuildLease lease{id1, type, *taken->lease};
  // Writers of the list wait from here on, as long as the build renews its lease; if
  // the build fails, the lease is released (or runs out).
  std::vector<FatPtr> made;
  std::optional<std::pair<FatPtr, FatPtr>> roots;
  uint64_t changes = 0;
  auto build = [&]() -> Task<absl::Status> {
    absl::StatusOr<Snapshot> snapshot = co_await ReadSnapshot(ctx, index, stats, &lease, tuning.blocks_per_read,
                                                                tuning.build_pause);
    if (!snapshot.ok()) co_return snapshot.status();
    if (snapshot->nothing_to_do || snapshot->changed || snapshot->lost) co_return absl::OkStatus();
    changes = snapshot->changes;
    std::sort(snapshot->by_id2.begin(), snapshot->by_id2.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.key < b.key; });
    for (size_t i = 1; i < snapshot->by_id2.size(); ++i) {
      if (snapshot->by_id2[i - 1].key == snapshot->by_id2[i].key) {
        co_return absl::InternalError("corrupt graph list: an id2 twice");
      }
    }
    absl::StatusOr<FatPtr> by_id2 = co_await WriteTree(ctx, index, stats, &lease, tuning.id2_shape(),
                                                       snapshot->hint, std::move(snapshot->by_id2), made);
    if (!by_id2.ok()) co_return by_id2.status();
    if (by_id2->is_null()) co_return absl::OkStatus();  // lost the lease
    absl::StatusOr<FatPtr> by_key = co_await WriteTree(ctx, index, stats, &lease, tuning.key_shape(),
                                                       snapshot->hint, std::move(snapshot->by_key), made);
    if (!by_key.ok()) co_return by_key.status();
    if (by_key->is_null()) co_return absl::OkStatus();
    roots.emplace(*by_id2, *by_key);
    co_return absl::OkStatus();
  };
  const absl::Status built = co_await build();
  absl::StatusOr<bool> linked = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) {
    return EndBuild(s, id1, type, lease.ends, changes, built.ok() ? roots : std::nullopt);
  });
  if (linked.ok() && *linked) {
    ++stats->index_builds;
    co_return true;
  }
  if (absl::Status st = co_await FreeNodes(ctx, index, stats, made); !st.ok()) co_return st;
  if (!built.ok()) co_return built;
  if (!linked.ok()) co_return linked.status();
  co_return false;
}

Task<absl::StatusOr<bool>> KeepBuildLease(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                          ClientStats* stats, BuildLease* lease) {
  const absl::Time now = absl::Now();
  if (absl::FromUnixSeconds(lease->ends) - now >= kRenewBelow) co_return true;
  const uint32_t held = lease->ends;
  const uint32_t renewed = static_cast<uint32_t>(absl::ToUnixSeconds(now + kLease)) + 1;
  absl::StatusOr<bool> kept = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<bool>> {
    absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, lease->id1);
    if (!vertex.ok()) co_return vertex.status();
    ListHead* list = vertex->object != nullptr ? vertex->v.FindList(lease->type) : nullptr;
    if (list == nullptr || list->build_lease != held) co_return false;
    list->build_lease = renewed;
    if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
    co_return true;
  });
  if (kept.ok() && *kept) lease->ends = renewed;
  co_return kept;
}

}  // namespace farm::graph
