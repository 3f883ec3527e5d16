#include "alloc/region_format.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "farm/base/object_layout.h"

namespace farm::alloc {

absl::Status FormatRegion(char* base, RegionId region, uint64_t region_bytes) {
  if (region_bytes < kMinRegionBytes || region_bytes % kBlockUnitBytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a shared region must be a multiple of %d bytes and at least %d bytes, not %d",
        kBlockUnitBytes, kMinRegionBytes, region_bytes));
  }
  RegionHeader h{};
  std::memcpy(h.magic, kRegionMagic, sizeof(h.magic));
  h.format = kRegionFormat;
  h.region = region;
  h.region_bytes = region_bytes;
  h.unit_bytes = static_cast<uint32_t>(kBlockUnitBytes);
  h.units = UnitsOf(region_bytes);
  h.size_class_table = SizeClassTableId();
  std::memcpy(base, &h, sizeof(h));
  StoreBlockWord(base, 0, BlockState{BlockKind::kMetadata, 0, 1, 1}.Encode());
  return absl::OkStatus();
}

absl::Status CheckRegionHeader(const char* base, RegionId region, uint64_t region_bytes) {
  RegionHeader h;
  std::memcpy(&h, base, sizeof(h));
  if (std::memcmp(h.magic, kRegionMagic, sizeof(h.magic)) != 0) {
    return absl::DataLossError(absl::StrFormat("region %d has no allocation header", region));
  }
  if (h.format != kRegionFormat) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "region %d has allocation format %d; this build reads %d", region, h.format, kRegionFormat));
  }
  if (h.region != region || h.region_bytes != region_bytes || h.unit_bytes != kBlockUnitBytes ||
      h.units != UnitsOf(region_bytes)) {
    return absl::DataLossError(absl::StrFormat(
        "region %d header names region %d of %d bytes in %d units of %d bytes; expected %d bytes",
        region, h.region, h.region_bytes, h.units, h.unit_bytes, region_bytes));
  }
  if (h.size_class_table != SizeClassTableId()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "region %d was formatted with another size-class table (%016x, this build %016x)", region,
        h.size_class_table, SizeClassTableId()));
  }
  return absl::OkStatus();
}

uint64_t LoadBlockWord(const char* base, uint32_t unit) {
  return LoadHeaderWord(base + kBlockTableOffset + uint64_t{unit} * 8);
}

void StoreBlockWord(char* base, uint32_t unit, uint64_t word) {
  StoreHeaderWord(base + kBlockTableOffset + uint64_t{unit} * 8, word);
}

void ClearSlotHeaders(char* base, uint32_t first_unit, SizeClass size_class, uint64_t generation) {
  const SizeClassInfo& info = ClassInfo(size_class);
  const uint64_t incarnation = IncarnationWord(FirstIncarnation(generation), false);
  char* first = base + uint64_t{first_unit} * kBlockUnitBytes;
  for (uint32_t slot = 0; slot < info.slots; ++slot) {
    char* header = first + uint64_t{slot} * info.slot_bytes;
    StoreHeaderWord(header + kVersionOffset, 0, std::memory_order_relaxed);
    StoreHeaderWord(header + kIncarnationOffset, incarnation, std::memory_order_relaxed);
  }
}

absl::Status ValidateBlockWord(uint32_t unit, uint64_t word, uint32_t units) {
  const BlockState s = BlockState::Decode(word);
  if (unit == 0 || unit >= units) {
    return absl::OutOfRangeError(
        absl::StrFormat("block unit %d outside 1..%d of the region", unit, units - 1));
  }
  switch (s.kind) {
    case BlockKind::kFree:
      return absl::OkStatus();
    case BlockKind::kSlab: {
      const SizeClassInfo& info = ClassInfo(s.size_class);
      if (s.units != info.block_units || unit + s.units > units) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "slab block at unit %d: %d units for class %d (which takes %d) in a region of %d", unit,
            s.units, s.size_class, info.block_units, units));
      }
      return absl::OkStatus();
    }
    case BlockKind::kContinuation:
      if (s.units == 0 || s.units >= kMaxBlockUnits || s.units > unit) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "continuation at unit %d points %d units back", unit, s.units));
      }
      return absl::OkStatus();
    case BlockKind::kMetadata:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("block-table word %016x at unit %d has an unknown kind", word, unit));
}

}  // namespace farm::alloc
