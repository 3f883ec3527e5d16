#include "kv/chained/chained_client.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "farm/api/coro.h"
#include "kv/chained/bucket_format.h"
#include "kv/chained/chained_ops.h"
#include "kv/layout.h"
#include "kv/layout_txn.h"

namespace farm::kv::chained {
namespace {

uint64_t StoredEstimate(uint64_t payload) { return (objStoredBytes(payload) + 15) / 16 * 16; }

// Counts one object's pairs into `scan`.
void CountSlots(std::span<const char> bucket, const BucketLayout& layout, TableScan& scan, bool head) {
  if (bucket[0] == 0) return;
  for (uint32_t i = 0; i < layout.slots_per_bucket; ++i) {
    std::span<const char> slot = BucketSlotAt(bucket, layout, i);
    const SlotKind kind = KindOf(slot);
    if (kind == SlotKind::kEmpty) break;
    ++scan.pairs;
    if (head) ++scan.pairs_in_buckets;
    if (kind == SlotKind::kInline) {
      scan.pair_bytes += InlineKey(slot).size() + InlineValue(slot).size();
    } else {
      const FatPtr value = OutOfLineValue(slot);
      ++scan.out_of_line;
      scan.pair_bytes += value.size - kValueHeaderBytes;
      scan.memory_bytes += StoredEstimate(value.size);
    }
  }
}

// One bucket and its chain into `scan`; `moved` is set (and nothing counted) if its
// head is moved. FailedPrecondition when a block was freed under the walk (the chain
// changed).
Task<absl::Status> ScanBucket(Context& ctx, const BucketLayout& layout, const BucketTable& table, uint64_t b,
                              TableScan& scan, bool& moved) {
  const uint64_t stride = StoredEstimate(layout.bucket_bytes());
  LockFreeOp op = lockFreeStart(ctx);
  absl::StatusOr<LockFreeCopy> head = co_await LockFreeRead(op, table.Bucket(b));
  if (!head.ok()) co_return head.status();
  std::span<const char> data(head->data.data(), head->data.size());
  if (absl::Status s = CheckBucket(data, layout); !s.ok()) co_return s;
  moved = IsMoved(data);
  if (moved) co_return absl::OkStatus();
  if (data[0] != 0 && ChainPairs(data) > 0) ++scan.buckets_in_use;
  CountSlots(data, layout, scan, true);
  uint64_t blocks = 0;
  FatPtr next = data[0] == 0 ? FatPtr{} : NextBlock(data);
  while (!next.is_null()) {
    absl::StatusOr<LockFreeCopy> block = co_await LockFreeRead(op, next);
    if (!block.ok()) co_return block.status();
    std::span<const char> bd(block->data.data(), block->data.size());
    CountSlots(bd, layout, scan, false);
    ++blocks;
    scan.memory_bytes += stride;
    next = NextBlock(bd);
  }
  scan.overflow_blocks += blocks;
  scan.longest_chain = std::max(scan.longest_chain, blocks);
  co_return absl::OkStatus();
}

// A table's buckets and chains (a fuzzy snapshot: each bucket with its chain as of one
// walk, walked again when an update or a migration freed a block under it), all of
// them or, with `only` (one flag per bucket), those flagged: which heads were moved
// (one flag per bucket; false for those not walked).
Task<absl::StatusOr<std::vector<bool>>> ScanBuckets(Context& ctx, const BucketLayout& layout,
                                                    const BucketTable& table, const std::vector<bool>* only,
                                                    TableScan& scan) {
  constexpr int kMaxWalks = 1000;
  std::vector<bool> moved(table.buckets(), false);
  scan.memory_bytes += table.buckets() * StoredEstimate(layout.bucket_bytes());
  for (uint64_t b = 0; b < table.buckets(); ++b) {
    if (only != nullptr && !(*only)[b]) continue;
    for (int walk = 1;; ++walk) {
      const TableScan before = scan;
      bool head_moved = false;
      absl::Status s = co_await ScanBucket(ctx, layout, table, b, scan, head_moved);
      if (s.ok()) {
        moved[b] = head_moved;
        break;
      }
      if (s.code() != absl::StatusCode::kFailedPrecondition || walk == kMaxWalks) co_return s;
      scan = before;
    }
  }
  co_return moved;
}

Task<absl::StatusOr<TableScan>> ScanTable(Context& ctx, ChainedReader& reader, ChainedTable table) {
  const BucketLayout& layout = table.map->layout();
  TableScan scan;
  for (uint32_t p = 0; p < table.map->size(); ++p) {
    scan.memory_bytes += StoredEstimate(layout.bucket_bytes());  // the root
    absl::StatusOr<PartitionView> view = co_await reader.Refresh(p);
    if (!view.ok()) co_return view.status();
    absl::StatusOr<std::vector<bool>> moved = co_await ScanBuckets(ctx, layout, *view->current, nullptr, scan);
    if (!moved.ok()) co_return moved.status();
    const uint64_t n = view->current->buckets();
    const uint64_t moved_heads = static_cast<uint64_t>(std::count(moved->begin(), moved->end(), true));
    const uint64_t homes = n - moved_heads + 2 * moved_heads;
    scan.bucket_slots += homes * layout.slots_per_bucket;
    if (view->next != nullptr) {
      ++scan.expanding;
      // Only next-table buckets b and b + N of the heads b the walk above saw moved: a
      // head it saw not moved had its pairs counted there, and if it was migrated since,
      // they are in the next table too (invariant 2), and would count twice.
      if (view->next->buckets() != 2 * n) {
        co_return absl::InternalError("chained: the next table is not twice the current one");
      }
      std::vector<bool> walk(2 * n, false);
      for (uint64_t b = 0; b < n; ++b) walk[b] = walk[b + n] = (*moved)[b];
      absl::StatusOr<std::vector<bool>> next_moved = co_await ScanBuckets(ctx, layout, *view->next, &walk, scan);
      if (!next_moved.ok()) co_return next_moved.status();
    }
  }
  co_return scan;
}

}  // namespace

Addr ChainedClient::UpdateTarget(absl::string_view key) const {
  return table_.map->partition(table_.map->PartitionOf(HashKey(key))).root.addr;
}

void ChainedClient::Scan(Done<absl::StatusOr<TableScan>> done) {
  Spawn(ScanTable(ctx(), reader(), table_), std::move(done));
}

std::unique_ptr<StoreTxn> ChainedClient::BeginTxn() { return std::make_unique<LayoutTxn<TxnOpsOf<ChainedTable>>>(ctx(), TxnOpsOf<ChainedTable>(table_)); }

}  // namespace farm::kv::chained
