#include "kv/chained/table_scan.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "kv/chained/bucket_format.h"
#include "kv/chained/bucket_table.h"
#include "kv/layout.h"

namespace farm::kv::chained {
namespace {

uint64_t StoredEstimate(uint64_t payload) { return (objStoredBytes(payload) + 15) / 16 * 16; }

// A lock-free READ failed because the object was freed (or reused) since its pointer was read.
bool Freed(const absl::Status& s) { return s.code() == absl::StatusCode::kFailedPrecondition; }

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

// What one walk of a bucket found.
enum class BucketWalk : uint8_t {
  kCounted,       // its pairs and chain are in the scan
  kMoved,         // its head is moved: nothing counted (its pairs are in the next table)
  kChainChanged,  // a block was freed under the walk: walk it again
  kTableEnded,    // its head was freed: the table is no longer the partition's
};

// One walk of bucket b and its chain into `scan`.
Task<absl::StatusOr<BucketWalk>> ScanBucket(Context& ctx, const BucketLayout& layout, const BucketTable& table,
                                            uint64_t b, TableScan& scan) {
  const uint64_t stride = StoredEstimate(layout.bucket_bytes());
  LockFreeOp op = lockFreeStart(ctx);
  absl::StatusOr<LockFreeCopy> head = co_await LockFreeRead(op, table.Bucket(b));
  if (!head.ok()) co_return Freed(head.status()) ? BucketWalk::kTableEnded : absl::StatusOr<BucketWalk>(head.status());
  std::span<const char> data(head->data.data(), head->data.size());
  if (absl::Status s = CheckBucket(data, layout); !s.ok()) co_return s;
  if (IsMoved(data)) co_return BucketWalk::kMoved;
  if (data[0] != 0 && ChainPairs(data) > 0) ++scan.buckets_in_use;
  CountSlots(data, layout, scan, true);
  uint64_t blocks = 0;
  FatPtr next = data[0] == 0 ? FatPtr{} : NextBlock(data);
  while (!next.is_null()) {
    absl::StatusOr<LockFreeCopy> block = co_await LockFreeRead(op, next);
    if (!block.ok()) co_return Freed(block.status()) ? BucketWalk::kChainChanged : absl::StatusOr<BucketWalk>(block.status());
    std::span<const char> bd(block->data.data(), block->data.size());
    CountSlots(bd, layout, scan, false);
    ++blocks;
    scan.memory_bytes += stride;
    next = NextBlock(bd);
  }
  scan.overflow_blocks += blocks;
  scan.longest_chain = std::max(scan.longest_chain, blocks);
  co_return BucketWalk::kCounted;
}

// One walk of a table's buckets: all of them or, with `only` (one flag per bucket),
// those flagged.
struct TableWalk {
  bool ended = false;       // a head was freed: the table is no longer the partition's
  std::vector<bool> moved;  // per bucket: its head was moved (false for those not walked)
};

Task<absl::StatusOr<TableWalk>> ScanBuckets(Context& ctx, const BucketLayout& layout, const BucketTable& table,
                                            const std::vector<bool>* only, TableScan& scan) {
  TableWalk walk{.moved = std::vector<bool>(table.buckets(), false)};
  scan.memory_bytes += table.buckets() * StoredEstimate(layout.bucket_bytes());
  for (uint64_t b = 0; b < table.buckets(); ++b) {
    if (only != nullptr && !(*only)[b]) continue;
    for (int attempt = 1;; ++attempt) {
      const TableScan before = scan;
      absl::StatusOr<BucketWalk> bucket = co_await ScanBucket(ctx, layout, table, b, scan);
      if (!bucket.ok()) co_return bucket.status();
      if (*bucket == BucketWalk::kTableEnded) {
        walk.ended = true;
        co_return walk;
      }
      if (*bucket != BucketWalk::kChainChanged) {
        walk.moved[b] = *bucket == BucketWalk::kMoved;
        break;
      }
      if (attempt == kMaxBucketWalks) {
        co_return absl::DeadlineExceededError(
            absl::StrFormat("chained scan: bucket %d's chain changed under %d walks", b, kMaxBucketWalks));
      }
      scan = before;
    }
  }
  co_return walk;
}

// One walk of the partition's tables in `view` into `scan`: false when the view turned
// out stale (a table of it ended, or heads were moved to a next table it does not name,
// or its next table started expanding too); `scan` then holds a partial count.
Task<absl::StatusOr<bool>> WalkPartition(Context& ctx, const BucketLayout& layout, const PartitionView& view,
                                         TableScan& scan) {
  scan.memory_bytes += StoredEstimate(layout.bucket_bytes());  // the root
  absl::StatusOr<TableWalk> current = co_await ScanBuckets(ctx, layout, *view.current, nullptr, scan);
  if (!current.ok()) co_return current.status();
  if (current->ended) co_return false;
  const uint64_t n = view.current->buckets();
  const uint64_t moved_heads = static_cast<uint64_t>(std::count(current->moved.begin(), current->moved.end(), true));
  if (moved_heads > 0 && view.next == nullptr) co_return false;  // an expansion began after the root's READ
  scan.bucket_slots += (n + moved_heads) * layout.slots_per_bucket;  // S per unmoved head, 2S per moved one
  if (view.next == nullptr) co_return true;
  ++scan.expanding;
  // Only next-table buckets b and b + N of the heads the walk above saw moved: a head it
  // saw not moved had its pairs counted there, and if it was migrated since, they are in
  // the next table too (invariant 2), and would count twice.
  if (view.next->buckets() != 2 * n) co_return absl::InternalError("chained: the next table is not twice the current one");
  std::vector<bool> only(2 * n, false);
  for (uint64_t b = 0; b < n; ++b) only[b] = only[b + n] = current->moved[b];
  absl::StatusOr<TableWalk> next = co_await ScanBuckets(ctx, layout, *view.next, &only, scan);
  if (!next.ok()) co_return next.status();
  // A moved head in the next table: it became current and expands in turn since the
  // root's READ, so its pairs may be in a table the view does not name.
  const bool next_moved = std::find(next->moved.begin(), next->moved.end(), true) != next->moved.end();
  co_return !next->ended && !next_moved;
}

}  // namespace

Task<absl::Status> ScanPartition(Context& ctx, ChainedReader& reader, const ChainedTable& table, uint32_t partition,
                                 std::optional<PartitionView> view, TableScan& scan) {
  const TableScan before = scan;
  for (int walk = 1; walk <= kMaxPartitionWalks; ++walk) {
    if (!view.has_value()) {
      absl::StatusOr<PartitionView> fresh = co_await reader.Refresh(partition);
      if (!fresh.ok() && !Freed(fresh.status())) co_return fresh.status();
      if (!fresh.ok()) continue;  // a directory freed since the root's READ: READ the root again
      view = *std::move(fresh);
    }
    absl::StatusOr<bool> walked = co_await WalkPartition(ctx, table.map->layout(), *view, scan);
    if (walked.ok() && *walked) co_return absl::OkStatus();
    scan = before;
    if (!walked.ok()) co_return walked.status();
    view.reset();
  }
  co_return absl::DeadlineExceededError(absl::StrFormat(
      "chained scan: partition %d's tables changed under %d walks", partition, kMaxPartitionWalks));
}

Task<absl::StatusOr<TableScan>> ScanTable(Context& ctx, ChainedReader& reader, ChainedTable table) {
  TableScan scan;
  for (uint32_t p = 0; p < table.map->size(); ++p) {
    if (absl::Status s = co_await ScanPartition(ctx, reader, table, p, std::nullopt, scan); !s.ok()) co_return s;
  }
  co_return scan;
}

}  // namespace farm::kv::chained
