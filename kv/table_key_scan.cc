#include "kv/table_key_scan.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kv/key_scan_pages.h"
#include "kv/layout.h"
#include "kv/tx_operation.h"

namespace farm::kv {
namespace {

// A chain longer than this is corrupt (kv/table_ops.cc has the same bound).
constexpr size_t kMaxChainBlocks = 1 << 20;

struct Position {
  uint32_t shard;
  uint32_t bucket;
};

uint64_t HomeBuckets(const Shard& shard) { return shard.buckets - 1; }

std::optional<Position> PositionOf(const ShardMap& map, uint64_t cursor) {
  for (uint32_t s = 0; s < map.shards().size(); ++s) {
    const uint64_t homes = HomeBuckets(map.shards()[s]);
    if (cursor < homes) return Position{s, static_cast<uint32_t>(cursor)};
    cursor -= homes;
  }
  return std::nullopt;
}

// The cursor of bucket `bucket` of shard `shard`, or 0 at the end of the table.
uint64_t CursorOf(const ShardMap& map, uint32_t shard, uint32_t bucket) {
  uint64_t cursor = bucket;
  for (uint32_t s = 0; s < shard; ++s) cursor += HomeBuckets(map.shards()[s]);
  uint64_t total = 0;
  for (const Shard& s : map.shards()) total += HomeBuckets(s);
  return cursor >= total ? 0 : cursor;
}

// What a window holds: inline keys, and the value objects of out-of-line pairs.
struct WindowPairs {
  std::vector<std::string> keys;
  std::vector<FatPtr> values;
};

// Adds the pairs of `object`'s slots whose home is in [first, end) of `shard`.
absl::Status Collect(const ShardMap& map, const Shard& shard, uint32_t first, uint32_t end,
                     std::span<const char> object, bool bucket, WindowPairs& pairs) {
  const TableLayout& layout = map.layout();
  const uint32_t slots = bucket ? layout.slots_per_bucket() : kSlotsPerBlock;
  for (uint32_t i = 0; i < slots; ++i) {
    std::span<const char> slot =
        bucket ? BucketSlot(object, layout, i) : BlockSlot(object, layout, i);
    if (absl::Status s = CheckSlot(slot, layout); !s.ok()) return s;
    const SlotKind kind = KindOf(slot);
    if (kind == SlotKind::kEmpty) continue;
    const uint32_t home = map.BucketOf(SlotHash(slot), shard);
    if (home < first || home >= end) continue;
    if (kind == SlotKind::kInline) {
      pairs.keys.emplace_back(InlineKey(slot));
    } else {
      pairs.values.push_back(OutOfLineValue(slot));
    }
  }
  return absl::OkStatus();
}

// The keys whose home is in [first, end) of shard `s`, read in one transaction; nullopt
// when that would read more than `budget` allows.
Task<absl::StatusOr<std::optional<std::vector<std::string>>>> ReadWindow(Context& ctx,
                                                                         const ShardMap& map,
                                                                         uint32_t s, uint32_t first,
                                                                         uint32_t end,
                                                                         ScanBudget budget) {
  const Shard& shard = map.shards()[s];
  const TableLayout& layout = map.layout();
  TxHandle tx = txCreate(ctx);
  std::vector<FatPtr> bucket_ptrs;
  for (uint32_t b = first; b <= end; ++b) {
    bucket_ptrs.push_back(map.Bucket(s, b));
    budget.Add(layout.bucket_bytes());  // a window of 257 buckets is within it
  }
  absl::StatusOr<std::vector<ObjBuf*>> buckets = co_await TxReadAll(*tx, std::move(bucket_ptrs));
  if (!buckets.ok()) co_return Retryable(buckets.status());
  WindowPairs pairs;
  for (uint32_t k = 0; k < buckets->size(); ++k) {
    std::span<const char> bucket = (*buckets)[k]->data();
    if (absl::Status st = Collect(map, shard, first, end, bucket, true, pairs); !st.ok())
      co_return st;
    if (first + k == end) break;  // the neighbour: its chain holds pairs of its own home
    size_t blocks = 0;
    for (FatPtr next = OverflowOf(bucket, layout); !next.is_null();) {
      if (++blocks > kMaxChainBlocks) {
        co_return absl::InternalError("an overflow chain is cyclic or impossibly long");
      }
      if (!budget.Add(layout.block_bytes())) co_return std::nullopt;
      absl::StatusOr<ObjBuf*> block = co_await TxRead(*tx, next);
      if (!block.ok()) co_return Retryable(block.status());
      std::span<const char> data = (*block)->data();
      if (absl::Status st = Collect(map, shard, first, end, data, false, pairs); !st.ok())
        co_return st;
      next = NextOf(data, layout);
    }
  }
  for (const FatPtr& value : pairs.values) {
    if (!budget.Add(value.size)) co_return std::nullopt;
  }
  if (absl::Status st = co_await AppendValueObjectKeys(*tx, std::move(pairs.values), pairs.keys);
      !st.ok()) {
    co_return st;
  }
  if (absl::Status st = co_await ValidateScan(*tx); !st.ok()) co_return st;
  co_return std::optional<std::vector<std::string>>(std::move(pairs.keys));
}

// The page of `window` home buckets from `at` (fewer at the shard's end); nullopt over
// the page's budget.
Task<absl::StatusOr<std::optional<KeyPage>>> ReadPage(Context& ctx,
                                                      std::shared_ptr<const ShardMap> map,
                                                      Position at, uint32_t window) {
  const uint32_t end = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{at.bucket} + window, HomeBuckets(map->shards()[at.shard])));
  absl::StatusOr<std::optional<std::vector<std::string>>> keys =
      co_await ReadWindow(ctx, *map, at.shard, at.bucket, end, ScanBudget(end - at.bucket));
  if (!keys.ok()) co_return keys.status();
  if (!keys->has_value()) co_return std::nullopt;
  co_return KeyPage{std::move(**keys), CursorOf(*map, at.shard, end)};
}

// One window's page from `cursor` (a position ScanKeyPage checked or a page answered).
Task<absl::StatusOr<KeyPage>> ScanWindow(Context& ctx, std::shared_ptr<const ShardMap> map,
                                         uint64_t cursor, uint32_t window) {
  const std::optional<Position> at = PositionOf(*map, cursor);
  if (!at.has_value()) co_return KeyPage{};
  ScanAttempt attempt = [&ctx, map, at = *at](uint32_t w) { return ReadPage(ctx, map, at, w); };
  co_return co_await RetryScanPage(ctx, window, std::move(attempt));
}

}  // namespace

Task<absl::StatusOr<KeyPage>> ScanKeyPage(Context& ctx, std::shared_ptr<const ShardMap> map,
                                          uint64_t cursor, uint32_t count) {
  if (!PositionOf(*map, cursor).has_value()) co_return KeyPage{};
  // Named std::functions: GCC 12 destroys twice a lambda converted in the co_await's
  // argument list (farm/api/coro.h).
  WindowScan scan_window = [&ctx, map](uint64_t from, uint32_t window) {
    return ScanWindow(ctx, map, from, window);
  };
  co_return co_await ScanAbout(cursor, count, count / 2 + count % 2, uint64_t{10} * count,
                               std::move(scan_window));
}

}  // namespace farm::kv
