#include "kv/linear/linear_client.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "farm/api/coro.h"
#include "kv/layout.h"
#include "kv/linear/linear_txn.h"
#include "kv/linear/slot_format.h"
#include "kv/messages.h"

namespace farm::kv::linear {
namespace {

uint64_t StoredEstimate(uint64_t payload) { return (objStoredBytes(payload) + 15) / 16 * 16; }

// Counts one group's slots into `scan`; `run` is the current run of non-empty slots.
absl::Status CountGroup(std::span<const char> group, const SlotLayout& layout, TableScan& scan, uint64_t& run) {
  if (absl::Status s = CheckGroup(group, layout); !s.ok()) return s;
  for (uint32_t i = 0; i < layout.slots_per_group; ++i) {
    std::span<const char> slot = GroupSlot(group, layout, i);
    if (absl::Status s = CheckLinearSlot(slot, layout); !s.ok()) return s;
    switch (KindOfSlot(slot)) {
      case Kind::kEmpty:
        run = 0;
        continue;
      case Kind::kTombstone:
        ++scan.tombstones;
        break;
      case Kind::kInline:
        ++scan.pairs;
        scan.pair_bytes += InlineKey(slot).size() + InlineValue(slot).size();
        break;
      case Kind::kOutOfLine: {
        const FatPtr value = OutOfLineValue(slot);
        ++scan.pairs;
        ++scan.out_of_line;
        scan.pair_bytes += value.size - kValueHeaderBytes;
        scan.memory_bytes += StoredEstimate(value.size);
        break;
      }
    }
    scan.longest_run = std::max(scan.longest_run, ++run);
  }
  return absl::OkStatus();
}

// Every group, kMaxGroupsPerRead per READ (a fuzzy snapshot).
Task<absl::StatusOr<TableScan>> ScanTable(Context& ctx, std::shared_ptr<const LinearTable> table) {
  const ProbeMap& map = *table->map;
  const SlotLayout& layout = map.layout();
  TableScan scan;
  scan.bucket_slots = map.slots();
  uint64_t run = 0;
  for (uint32_t s = 0; s < map.shards().size(); ++s) {
    const Shard& shard = map.shards()[s];
    scan.memory_bytes += uint64_t{shard.buckets} * shard.stride;
    for (uint32_t first = 0; first < shard.buckets; first += kMaxGroupsPerRead) {
      std::vector<FatPtr> groups;
      for (uint32_t g = first; g < std::min(shard.buckets, first + kMaxGroupsPerRead); ++g) {
        groups.push_back(map.Group(GroupRef{s, g}));
      }
      LockFreeOp op = lockFreeStart(ctx);
      absl::StatusOr<std::vector<LockFreeCopy>> copies = co_await LockFreeReadMany(op, groups);
      if (!copies.ok()) co_return copies.status();
      for (const LockFreeCopy& copy : *copies) {
        if (absl::Status st = CountGroup(copy.data, layout, scan, run); !st.ok()) co_return st;
      }
    }
  }
  scan.pairs_in_buckets = scan.pairs;
  co_return scan;
}

}  // namespace

LinearClient::LinearClient(Context& ctx, std::shared_ptr<const LinearTable> table, MsgId update_msg)
    : ctx_(ctx), table_(std::move(table)), update_msg_(update_msg), reader_(ctx, table_) {}

void LinearClient::Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
                          Done<absl::StatusOr<KeyOpResult>> done) {
  absl::Status invalid = CheckKeyLimit(key);
  if (invalid.ok()) invalid = CheckValueLimit(value);
  if (!invalid.ok()) {
    ctx_.Defer([invalid, done = std::move(done)]() mutable { done(invalid); });
    return;
  }
  const ProbeMap& map = *table_->map;
  const Addr home = map.Group(map.GroupOf(map.HomeOf(HashKey(key)))).addr;
  const std::string request = EncodeUpdateRequest(UpdateRequest{kind, key, value, delta});
  msgSend(ctx_, home, update_msg_, request, [done = std::move(done)](absl::StatusOr<std::string> reply) mutable {
    if (!reply.ok()) return done(reply.status());
    done(DecodeUpdateReply(*reply));
  });
}

void LinearClient::Scan(Done<absl::StatusOr<TableScan>> done) { Spawn(ScanTable(ctx_, table_), std::move(done)); }

std::unique_ptr<StoreTxn> LinearClient::BeginTxn() { return std::make_unique<LinearTxn>(*this); }

}  // namespace farm::kv::linear
