#include "alloc/scan.h"

#include "absl/strings/str_format.h"
#include "alloc/region_format.h"
#include "farm/base/object_layout.h"

namespace farm::alloc {

std::vector<RegionScan::Object> RegionScan::LiveObjects() const {
  std::vector<Object> out;
  for (const ScannedBlock& b : blocks) {
    const uint64_t slot_bytes = ClassInfo(b.size_class).slot_bytes;
    for (size_t i = 0; i < b.live_slots.size(); ++i) {
      const uint64_t offset = uint64_t{b.first_unit} * kBlockUnitBytes + b.live_slots[i] * slot_bytes;
      out.push_back(Object{Addr(region, static_cast<uint32_t>(offset)), b.incarnations[i]});
    }
  }
  return out;
}

absl::StatusOr<RegionScan> ScanRegion(const char* base, RegionId region, uint64_t region_bytes) {
  if (absl::Status s = CheckRegionHeader(base, region, region_bytes); !s.ok()) return s;
  RegionScan scan;
  scan.region = region;
  scan.units = UnitsOf(region_bytes);
  uint32_t unit = 1;
  while (unit < scan.units) {
    const uint64_t word = LoadBlockWord(base, unit);
    if (absl::Status s = ValidateBlockWord(unit, word, scan.units); !s.ok()) {
      return absl::DataLossError(absl::StrFormat("region %d: %s", region, s.message()));
    }
    const BlockState state = BlockState::Decode(word);
    if (state.kind == BlockKind::kFree) {
      ++scan.free_units;
      ++unit;
      continue;
    }
    if (state.kind != BlockKind::kSlab) {
      return absl::DataLossError(absl::StrFormat(
          "region %d: unit %d is a continuation without its slab block", region, unit));
    }
    for (uint32_t i = 1; i < state.units; ++i) {
      const BlockState c = BlockState::Decode(LoadBlockWord(base, unit + i));
      if (c.kind != BlockKind::kContinuation || c.units != i) {
        return absl::DataLossError(absl::StrFormat(
            "region %d: the %d-unit block at unit %d lacks its continuation at unit %d", region,
            state.units, unit, unit + i));
      }
    }
    ScannedBlock block;
    block.first_unit = unit;
    block.size_class = state.size_class;
    block.generation = state.generation;
    const SizeClassInfo& info = ClassInfo(state.size_class);
    const char* first = base + uint64_t{unit} * kBlockUnitBytes;
    for (uint32_t slot = 0; slot < info.slots; ++slot) {
      const uint64_t w = LoadHeaderWord(first + uint64_t{slot} * info.slot_bytes + kIncarnationOffset);
      if (IsAllocated(w)) {
        block.live_slots.push_back(slot);
        block.incarnations.push_back(IncarnationOf(w));
      }
    }
    scan.blocks.push_back(std::move(block));
    unit += state.units;
  }
  return scan;
}

}  // namespace farm::alloc
