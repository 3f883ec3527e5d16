#include "kv/linear/probe_map.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace farm::kv::linear {

absl::StatusOr<ProbeMap> ProbeMap::Create(SlotLayout layout, std::vector<Shard> shards) {
  if (absl::Status s = layout.Validate(); !s.ok()) return s;
  if (shards.empty()) return absl::InvalidArgumentError("a table needs at least one shard");
  for (const Shard& s : shards) {
    if (s.buckets < 1 || s.first.is_null() || (s.buckets > 1 && s.stride < layout.group_bytes())) {
      return absl::InvalidArgumentError(absl::StrFormat("shard at %s: %d groups of stride %d (needs >= %d bytes)",
                                                        s.first.ToString(), s.buckets, s.stride, layout.group_bytes()));
    }
  }
  std::sort(shards.begin(), shards.end(), [](const Shard& a, const Shard& b) { return a.first.raw() < b.first.raw(); });
  return ProbeMap(layout, std::move(shards));
}

ProbeMap::ProbeMap(SlotLayout layout, std::vector<Shard> shards) : layout_(layout), shards_(std::move(shards)) {
  prefix_.reserve(shards_.size() + 1);
  for (const Shard& s : shards_) {
    prefix_.push_back(slots_);
    slots_ += uint64_t{s.buckets} * layout_.slots_per_group;
  }
  prefix_.push_back(slots_);
  max_probe_ = std::min(slots_, kMaxProbeSlots);
}

uint64_t ProbeMap::HomeOf(uint64_t hash) const {
  // HashKey is well mixed; remixed so that the home does not follow the bits other
  // uses of the hash take. Scaled, not reduced: uniform without a division.
  const uint64_t mixed = (hash ^ (hash >> 31)) * 0x94d049bb133111ebull;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(mixed) * slots_) >> 64);
}

GroupRef ProbeMap::GroupOf(uint64_t index) const {
  // The last shard whose first slot is <= index (shards are few: a binary search).
  const auto it = std::upper_bound(prefix_.begin(), prefix_.end() - 1, index) - 1;
  const uint32_t shard = static_cast<uint32_t>(it - prefix_.begin());
  return GroupRef{shard, static_cast<uint32_t>((index - *it) / layout_.slots_per_group)};
}

FatPtr ProbeMap::Group(GroupRef g) const {
  const Shard& s = shards_[g.shard];
  return FatPtr{Addr(s.first.region(), s.first.offset() + g.group * s.stride), layout_.group_bytes(), s.incarnation};
}

uint64_t ProbeMap::PlanReads(uint64_t index, uint64_t count, std::vector<GroupRun>& runs) const {
  runs.clear();
  const uint32_t g = layout_.slots_per_group;
  uint64_t covered = 0;  // slots from `index` on held by the runs so far
  uint64_t at = index;
  while (covered < count) {
    const GroupRef first = GroupOf(at);
    const uint32_t in_shard = shards_[first.shard].buckets;
    // Groups wanted from this one on: enough for the rest of `count`.
    const uint64_t slots_wanted = count - covered + SlotInGroup(at);
    const uint64_t groups_wanted = (slots_wanted + g - 1) / g;
    const uint32_t n = static_cast<uint32_t>(
        std::min<uint64_t>({groups_wanted, in_shard - first.group, kMaxGroupsPerRead}));
    runs.push_back(GroupRun{first.shard, first.group, n});
    const uint64_t held = uint64_t{n} * g - SlotInGroup(at);
    covered += held;
    at = Advance(at, held);
  }
  return covered;
}

}  // namespace farm::kv::linear
