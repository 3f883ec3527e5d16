#include "kv/table_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "farm/api/coro.h"
#include "kv/layout.h"
#include "kv/table_key_scan.h"
#include "kv/table_txn.h"
#include "kv/tx_operation.h"

namespace farm::kv {
namespace {

constexpr uint32_t kBucketsPerScanRead = 8;

uint64_t SlotEstimate(uint64_t payload) { return (objStoredBytes(payload) + 15) / 16 * 16; }

void CountSlot(std::span<const char> slot, TableScan& scan) {
  switch (KindOf(slot)) {
    case SlotKind::kEmpty:
      return;
    case SlotKind::kInline:
      scan.pair_bytes += InlineKey(slot).size() + InlineValue(slot).size();
      break;
    case SlotKind::kOutOfLine: {
      const FatPtr value = OutOfLineValue(slot);
      ++scan.out_of_line;
      scan.pair_bytes += value.size - kValueHeaderBytes;
      scan.memory_bytes += SlotEstimate(value.size);
      break;
    }
  }
  ++scan.pairs;
}

// A scan walks a bucket's chain again at most this often when it changes under it.
constexpr int kChainAttempts = 8;

// Counts one bucket's overflow chain into `scan`. The walk follows pointers read at
// different times, so a remove may rename or free a block under it (kv/table_ops.h,
// invariant 4): then the bucket is read again and its chain counted afresh. A chain
// that changes under every attempt (a hot one) counts as far as the last walk got:
// the scan is fuzzy, and it must not fail or starve because of updates.
Task<absl::Status> CountChain(LockFreeOp& op, const TableLayout& layout, FatPtr bucket, std::string copy,
                              TableScan& scan) {
  for (int attempt = 1;; ++attempt) {
    TableScan chain;
    bool changed = false;
    for (FatPtr next = OverflowOf(copy, layout); !next.is_null();) {
      absl::StatusOr<LockFreeCopy> block = co_await LockFreeRead(op, next);
      if (!block.ok()) {
        if (block.status().code() != absl::StatusCode::kFailedPrecondition) co_return block.status();
        changed = true;
        break;
      }
      ++chain.longest_chain;
      ++chain.overflow_blocks;
      chain.memory_bytes += SlotEstimate(layout.block_bytes());
      for (uint32_t i = 0; i < kSlotsPerBlock; ++i) {
        CountSlot(BlockSlot(std::span<const char>(block->data), layout, i), chain);
      }
      next = NextOf(block->data, layout);
    }
    if (!changed || attempt == kChainAttempts) {
      scan.pairs += chain.pairs;
      scan.out_of_line += chain.out_of_line;
      scan.pair_bytes += chain.pair_bytes;
      scan.overflow_blocks += chain.overflow_blocks;
      scan.memory_bytes += chain.memory_bytes;
      scan.longest_chain = std::max(scan.longest_chain, chain.longest_chain);
      co_return absl::OkStatus();
    }
    absl::StatusOr<LockFreeCopy> again = co_await LockFreeRead(op, bucket);
    if (!again.ok()) co_return again.status();
    copy = std::move(again->data);
  }
}

Task<absl::StatusOr<TableScan>> ScanTable(Context& ctx, std::shared_ptr<const ShardMap> map) {
  const TableLayout& layout = map->layout();
  TableScan scan;
  for (uint32_t s = 0; s < map->shards().size(); ++s) {
    const Shard& shard = map->shards()[s];
    scan.memory_bytes += uint64_t{shard.buckets} * shard.stride;
    for (uint32_t first = 0; first < shard.buckets; first += kBucketsPerScanRead) {
      std::vector<FatPtr> buckets;
      for (uint32_t b = first; b < std::min(shard.buckets, first + kBucketsPerScanRead); ++b) {
        buckets.push_back(map->Bucket(s, b));
      }
      LockFreeOp op = lockFreeStart(ctx);
      absl::StatusOr<std::vector<LockFreeCopy>> copies = co_await LockFreeReadMany(op, buckets);
      if (!copies.ok()) co_return copies.status();
      for (size_t k = 0; k < copies->size(); ++k) {
        std::string& bucket = (*copies)[k].data;
        scan.bucket_slots += layout.slots_per_bucket();
        for (uint32_t i = 0; i < layout.slots_per_bucket(); ++i) {
          const uint64_t before = scan.pairs;
          CountSlot(BucketSlot(std::span<const char>(bucket), layout, i), scan);
          scan.pairs_in_buckets += scan.pairs - before;
        }
        if (absl::Status st = co_await CountChain(op, layout, buckets[k], std::move(bucket), scan); !st.ok()) {
          co_return st;
        }
      }
    }
  }
  co_return scan;
}

}  // namespace

Addr TableClient::UpdateTarget(absl::string_view key) const {
  const Home home = map_->Locate(HashKey(key));
  return map_->Bucket(home.shard, home.bucket).addr;
}

void TableClient::Scan(Done<absl::StatusOr<TableScan>> done) { Spawn(ScanTable(ctx(), map_), std::move(done)); }

void TableClient::ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) {
  RunTxOperation(ctx(), ScanKeyPage(ctx(), map_, cursor, count), std::move(done));
}

std::unique_ptr<StoreTxn> TableClient::BeginTxn() { return std::make_unique<TableTxn>(ctx(), HopscotchTxnOps(*map_)); }

}  // namespace farm::kv
