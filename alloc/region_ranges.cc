#include "alloc/region_ranges.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "alloc/region_format.h"

namespace farm::alloc {

std::vector<ByteRange> WrittenRanges(const Region& region) {
  std::vector<ByteRange> ranges;
  off_t at = 0;
  while (static_cast<uint64_t>(at) < region.size()) {
    const off_t data = lseek(region.fd(), at, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // no data after `at`
      return {{0, region.size()}};
    }
    off_t hole = lseek(region.fd(), data, SEEK_HOLE);
    if (hole < 0) hole = static_cast<off_t>(region.size());
    const uint64_t end = std::min<uint64_t>(hole, region.size());
    if (end > static_cast<uint64_t>(data)) ranges.push_back({static_cast<uint64_t>(data), end});
    at = static_cast<off_t>(end);
    if (end <= static_cast<uint64_t>(data)) break;  // the kernel contradicts itself: stop
  }
  return ranges;
}

absl::StatusOr<std::vector<ByteRange>> UsedRanges(const Region& region) {
  if (absl::Status s = CheckRegionHeader(region.base(), region.id(), region.size()); !s.ok())
    return s;
  // The units in use, as byte ranges, adjacent ones merged.
  std::vector<ByteRange> units;
  const uint32_t count = UnitsOf(region.size());
  for (uint32_t u = 0; u < count; ++u) {
    if (u > 0 && BlockState::Decode(LoadBlockWord(region.base(), u)).kind == BlockKind::kFree)
      continue;
    const uint64_t begin = uint64_t{u} * kBlockUnitBytes;
    if (!units.empty() && units.back().end == begin) {
      units.back().end = begin + kBlockUnitBytes;
    } else {
      units.push_back({begin, begin + kBlockUnitBytes});
    }
  }
  // Intersected with the pages ever written (both lists ascending and disjoint).
  const std::vector<ByteRange> written = WrittenRanges(region);
  std::vector<ByteRange> used;
  size_t i = 0, j = 0;
  while (i < units.size() && j < written.size()) {
    const uint64_t begin = std::max(units[i].begin, written[j].begin);
    const uint64_t end = std::min(units[i].end, written[j].end);
    if (begin < end) {
      if (!used.empty() && used.back().end == begin) {
        used.back().end = end;
      } else {
        used.push_back({begin, end});
      }
    }
    if (units[i].end < written[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return used;
}

}  // namespace farm::alloc
