// ProbeMap: the linear-probing table's slots as one array over the cluster's shards.
// Shards (runs of adjacent slot groups, kv/shard_catalog.h) are concatenated in the
// catalog's order (ascending address, the same on every machine): slot i of the table
// is slot i mod G of its group. A key's home slot is its hash scaled onto [0, M), M the
// table's slots; its probe sequence is home, home + 1, ... modulo M: it runs from one
// shard's last slot into the next shard's first and from the table's end to slot 0.
//
// A READ of consecutive slots reads the groups that hold them: at most
// kMaxGroupsPerRead groups of one shard per READ (lockFreeReadMany's limit), so a run
// of slots that crosses a shard boundary or spans more groups is several READs,
// issued together (one round trip).
//
// Immutable once built; shared by every thread.
#ifndef FARM_KV_LINEAR_PROBE_MAP_H_
#define FARM_KV_LINEAR_PROBE_MAP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "kv/linear/slot_format.h"
#include "kv/shard.h"

namespace farm::kv::linear {

inline constexpr uint32_t kMaxGroupsPerRead = 8;
// A pair is placed within this many slots of its home (probe sequences are bounded: an
// insert that finds no free slot within them fails ResourceExhausted).
inline constexpr uint64_t kMaxProbeSlots = 1 << 13;

struct GroupRef {
  uint32_t shard = 0;
  uint32_t group = 0;  // in the shard
};

// Consecutive groups of one shard: one READ.
struct GroupRun {
  uint32_t shard = 0;
  uint32_t first = 0;  // group in the shard
  uint32_t count = 0;  // 1 .. kMaxGroupsPerRead
};

class ProbeMap {
 public:
  // InvalidArgument for no shards, an invalid layout or a shard whose stride is smaller
  // than a group.
  static absl::StatusOr<ProbeMap> Create(SlotLayout layout, std::vector<Shard> shards);

  const SlotLayout& layout() const { return layout_; }
  const std::vector<Shard>& shards() const { return shards_; }
  uint64_t slots() const { return slots_; }
  uint32_t slots_per_group() const { return layout_.slots_per_group; }
  // Slots a probe examines at most: min(M, kMaxProbeSlots).
  uint64_t max_probe() const { return max_probe_; }

  // The home slot of a key hash (kv/layout.h HashKey), uniform over [0, slots()).
  uint64_t HomeOf(uint64_t hash) const;
  // The group holding slot `index` (< slots()) and the slot's place in it.
  GroupRef GroupOf(uint64_t index) const;
  uint32_t SlotInGroup(uint64_t index) const { return static_cast<uint32_t>(index % layout_.slots_per_group); }
  // The table index of a group's first slot.
  uint64_t FirstSlotOf(GroupRef g) const { return prefix_[g.shard] + uint64_t{g.group} * layout_.slots_per_group; }
  FatPtr Group(GroupRef g) const;
  uint64_t Advance(uint64_t index, uint64_t n) const { return (index + n) % slots_; }

  // The READs that fetch at least `count` (>= 1) slots from `index` on, wrapping around,
  // in probe order; returns the slots they hold from `index` on (>= count, whole
  // groups). `runs` is cleared first (its capacity is reused).
  uint64_t PlanReads(uint64_t index, uint64_t count, std::vector<GroupRun>& runs) const;

 private:
  ProbeMap(SlotLayout layout, std::vector<Shard> shards);

  SlotLayout layout_;
  std::vector<Shard> shards_;
  std::vector<uint64_t> prefix_;  // table index of each shard's first slot; then M
  uint64_t slots_ = 0;
  uint64_t max_probe_ = 0;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_PROBE_MAP_H_
