// The allocation metadata every shared region carries in memory, so that it is
// replicated with the region and recovery can rebuild allocator state by scanning
// (scan.h). Block 0 of a region (the first kBlockUnitBytes) is reserved for it:
//
//   offset 0     RegionHeader (48 bytes, fixed little-endian layout below)
//   offset 4096  the block table: one 8-byte BlockState per block unit of the region
//
// Block units are kBlockUnitBytes (1 MiB); a slab block spans 1..kMaxBlockUnits units.
// A BlockState word:
//   bits 63..60  kind: 0 free, 1 metadata (unit 0), 2 slab (first unit of a block),
//                3 continuation (a later unit of a block)
//   bits 59..52  size class (slab)
//   bits 51..40  units in the block (slab) / distance back to the first unit
//                (continuation)
//   bits 39..0   generation: grows each time the unit is assigned to a block (a new
//                block takes one more than the newest of its units)
// Entries change only on the region's primary, one at a time, and each change is sent to
// the backups before the block is used (block_allocator.h); backups apply the same
// words (backup_regions.h). Format changes bump kRegionFormat.
#ifndef FARM_ALLOC_REGION_FORMAT_H_
#define FARM_ALLOC_REGION_FORMAT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "alloc/size_classes.h"
#include "farm/base/address.h"

namespace farm::alloc {

inline constexpr char kRegionMagic[8] = {'F', 'a', 'R', 'M', 'r', 'e', 'g', 'n'};
inline constexpr uint32_t kRegionFormat = 1;
inline constexpr uint64_t kBlockTableOffset = 4096;
// The smallest region: the metadata unit and room for the longest block.
inline constexpr uint64_t kMinRegionBytes = (1 + kMaxBlockUnits) * kBlockUnitBytes;

struct RegionHeader {
  char magic[8];
  uint32_t format;
  uint32_t region;
  uint64_t region_bytes;
  uint32_t unit_bytes;
  uint32_t units;
  uint64_t size_class_table;
  uint64_t reserved;
};
static_assert(sizeof(RegionHeader) == 48);

enum class BlockKind : uint8_t { kFree = 0, kMetadata = 1, kSlab = 2, kContinuation = 3 };

struct BlockState {
  BlockKind kind = BlockKind::kFree;
  SizeClass size_class = 0;
  uint32_t units = 0;        // slab: block length; continuation: distance to the first unit
  uint64_t generation = 0;   // < 2^40

  static constexpr uint64_t kGenerationMask = (uint64_t{1} << 40) - 1;
  uint64_t Encode() const {
    return (uint64_t{static_cast<uint8_t>(kind)} << 60) | (uint64_t{size_class} << 52) |
           (uint64_t{units & 0xFFF} << 40) | (generation & kGenerationMask);
  }
  static BlockState Decode(uint64_t word) {
    BlockState s;
    s.kind = static_cast<BlockKind>(word >> 60);
    s.size_class = static_cast<SizeClass>(word >> 52);
    s.units = static_cast<uint32_t>((word >> 40) & 0xFFF);
    s.generation = word & kGenerationMask;
    return s;
  }
  friend bool operator==(const BlockState&, const BlockState&) = default;
};

// Units of a region of `region_bytes`.
constexpr uint32_t UnitsOf(uint64_t region_bytes) {
  return static_cast<uint32_t>(region_bytes / kBlockUnitBytes);
}

// Writes a fresh header and an all-free table (unit 0: metadata) into zeroed region
// memory. InvalidArgument for a size under kMinRegionBytes or not a unit multiple.
absl::Status FormatRegion(char* base, RegionId region, uint64_t region_bytes);
// Checks a region's header: magic, format, id, size and size-class table. The error
// says which field is wrong.
absl::Status CheckRegionHeader(const char* base, RegionId region, uint64_t region_bytes);

// Table access; `unit` < UnitsOf(region_bytes). Atomic: scanners and backups may read
// while the primary writes.
uint64_t LoadBlockWord(const char* base, uint32_t unit);
void StoreBlockWord(char* base, uint32_t unit, uint64_t word);

// The first incarnation of the slots of a block of `generation`: fresh memory starts at
// 0; a block assigned anew after earlier use starts at generation << 20, so the low 32
// bits a FatPtr carries differ from those of the objects the units held before (for
// the next 4096 reuses of the units, each slot reused up to 2^20 times per block).
constexpr uint64_t FirstIncarnation(uint64_t generation) {
  return generation <= 1 ? 0 : generation << 20;
}

// Makes every slot of a `size_class` block of `generation` starting at `first_unit` a
// free object of incarnation FirstIncarnation(generation), version 0. Done when units
// are assigned anew after earlier use, on the primary and on each backup alike, so old
// headers never look like objects of the new class and stale pointers into the old one
// do not match; payload bytes are left as they are (nothing reads them before a new
// object is written).
void ClearSlotHeaders(char* base, uint32_t first_unit, SizeClass size_class, uint64_t generation);

// Checks that `word` may be written at `unit` of a region of `units` units: a known
// kind, a slab's class and length that fit the region, a continuation pointing back
// inside it, never unit 0. What a backup runs on a received entry before applying it.
absl::Status ValidateBlockWord(uint32_t unit, uint64_t word, uint32_t units);

}  // namespace farm::alloc

#endif  // FARM_ALLOC_REGION_FORMAT_H_
