// ScanRegion: rebuilds what the allocator knows of a region from the region alone — its
// header, block table and object headers (paper section 3.3: the allocated bits are
// "scanned during recovery to reconstruct allocator data structures").
//
// The scan reads; it never writes. Every table entry is validated (ValidateBlockWord)
// and a slab block must be followed by exactly its continuations, so a corrupt table is
// DataLoss naming the unit, never a wrong allocator state. Headers are read atomically,
// so a scan may run while the region is in use, but it is then only a snapshot.
#ifndef FARM_ALLOC_SCAN_H_
#define FARM_ALLOC_SCAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/size_classes.h"
#include "farm/base/address.h"

namespace farm::alloc {

struct ScannedBlock {
  uint32_t first_unit = 0;
  SizeClass size_class = 0;
  uint64_t generation = 0;
  std::vector<uint32_t> live_slots;  // ascending
  std::vector<uint64_t> incarnations;  // of live_slots[i]
};

struct RegionScan {
  RegionId region = kNullRegion;
  uint32_t units = 0;
  uint32_t free_units = 0;
  std::vector<ScannedBlock> blocks;  // by first unit

  // Every live object: its address and full incarnation.
  struct Object {
    Addr addr;
    uint64_t incarnation;
    friend bool operator==(const Object&, const Object&) = default;
  };
  std::vector<Object> LiveObjects() const;
};

absl::StatusOr<RegionScan> ScanRegion(const char* base, RegionId region, uint64_t region_bytes);

}  // namespace farm::alloc

#endif  // FARM_ALLOC_SCAN_H_
