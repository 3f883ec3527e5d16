// Which bytes of a region can hold anything, found without touching the rest: regions
// are sparse (2 GB reserved, pages committed only where written), and reading an
// untouched page of a region commits it.
//
//   WrittenRanges  the pages ever written: the region's memfd data extents
//                  (SEEK_DATA/SEEK_HOLE), or the whole region where the kernel cannot tell
//   UsedRanges     the part of those inside units that the region's block table
//                  (region_format.h) says are in use: the metadata unit (header and
//                  table) and every slab block's units. Free units are left out,
//                  whatever stale bytes they hold: nothing reads a free unit, and a
//                  block assigned there anew has its slot headers cleared on every copy
//                  (ClearSlotHeaders)
//
// Ranges are [begin, end) byte offsets, ascending, disjoint and non-empty.
#ifndef FARM_ALLOC_REGION_RANGES_H_
#define FARM_ALLOC_REGION_RANGES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/base/region.h"

namespace farm::alloc {

struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

std::vector<ByteRange> WrittenRanges(const Region& region);

// The region must carry the format (its header is checked: the error says what is
// wrong) and nobody may change its block table meanwhile.
absl::StatusOr<std::vector<ByteRange>> UsedRanges(const Region& region);

}  // namespace farm::alloc

#endif  // FARM_ALLOC_REGION_RANGES_H_
