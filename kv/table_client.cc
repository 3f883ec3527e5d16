#include "kv/table_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "farm/api/coro.h"
#include "farm/base/object_layout.h"
#include "kv/layout.h"
#include "kv/messages.h"

namespace farm::kv {
namespace {

constexpr uint32_t kBucketsPerScanRead = 8;

uint64_t SlotEstimate(uint64_t payload) { return (MaxStoredBytes(payload) + 15) / 16 * 16; }

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
      for (const LockFreeCopy& copy : *copies) {
        const std::string& bucket = copy.data;
        scan.bucket_slots += layout.slots_per_bucket();
        for (uint32_t i = 0; i < layout.slots_per_bucket(); ++i) {
          const uint64_t before = scan.pairs;
          CountSlot(BucketSlot(std::span<const char>(bucket), layout, i), scan);
          scan.pairs_in_buckets += scan.pairs - before;
        }
        uint64_t chain = 0;
        for (FatPtr next = OverflowOf(bucket, layout); !next.is_null();) {
          absl::StatusOr<LockFreeCopy> block = co_await LockFreeRead(op, next);
          if (!block.ok()) co_return block.status();
          ++chain;
          ++scan.overflow_blocks;
          scan.memory_bytes += SlotEstimate(layout.block_bytes());
          for (uint32_t i = 0; i < kSlotsPerBlock; ++i) {
            CountSlot(BlockSlot(std::span<const char>(block->data), layout, i), scan);
          }
          next = NextOf(block->data, layout);
        }
        scan.longest_chain = std::max(scan.longest_chain, chain);
      }
    }
  }
  co_return scan;
}

}  // namespace

TableClient::TableClient(Context& ctx, std::shared_ptr<const ShardMap> map)
    : ctx_(ctx), map_(std::move(map)), reader_(ctx, map_) {}

void TableClient::Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
                         Done<absl::StatusOr<KeyOpResult>> done) {
  absl::Status invalid;
  if (key.size() > kMaxKeyBytes) {
    invalid = absl::InvalidArgumentError(
        absl::StrFormat("a key of %d bytes is over the limit of %d bytes", key.size(), kMaxKeyBytes));
  } else if (value.size() > kMaxValueBytes) {
    invalid = absl::InvalidArgumentError(
        absl::StrFormat("a value of %d bytes is over the limit of %d bytes", value.size(), kMaxValueBytes));
  }
  if (!invalid.ok()) {
    ctx_.loop().Defer([invalid, done = std::move(done)]() mutable { done(invalid); });
    return;
  }
  const Home home = map_->Locate(HashKey(key));
  const std::string request = EncodeUpdateRequest(UpdateRequest{kind, key, value, delta});
  msgSend(ctx_, map_->Bucket(home.shard, home.bucket).addr, kKvUpdateMsgId, request,
          [done = std::move(done)](absl::StatusOr<std::string> reply) mutable {
            if (!reply.ok()) return done(reply.status());
            done(DecodeUpdateReply(*reply));
          });
}

void TableClient::Scan(Done<absl::StatusOr<TableScan>> done) { Spawn(ScanTable(ctx_, map_), std::move(done)); }

}  // namespace farm::kv
