#include "kv/linear/linear_client.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "farm/api/coro.h"
#include "kv/layout.h"
#include "kv/layout_txn.h"
#include "kv/tx_operation.h"
#include "kv/linear/linear_key_scan.h"
#include "kv/linear/linear_ops.h"
#include "kv/linear/slot_format.h"

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

Addr LinearClient::UpdateTarget(absl::string_view key) const {
  const ProbeMap& map = *table_->map;
  return map.Group(map.GroupOf(map.HomeOf(HashKey(key)))).addr;
}

void LinearClient::Scan(Done<absl::StatusOr<TableScan>> done) { Spawn(ScanTable(ctx(), table_), std::move(done)); }

void LinearClient::ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) {
  RunTxOperation(ctx(), ScanKeyPage(ctx(), table_->map, cursor, count), std::move(done));
}

std::unique_ptr<StoreTxn> LinearClient::BeginTxn() { return std::make_unique<LayoutTxn<TxnOpsOf<ProbeMap>>>(ctx(), TxnOpsOf<ProbeMap>(map())); }

}  // namespace farm::kv::linear
