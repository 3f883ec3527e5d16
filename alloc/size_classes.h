// Size classes of the slab allocators (paper section 3.3): 256 slot sizes from 64 B to
// 1 MiB. A slot holds one object as stored (header, payload and line versions, see
// farm/base/object_layout.h); an object goes into the smallest class whose slot holds
// MaxStoredBytes(payload).
//
// The table. Slots are multiples of kObjectAlignment (16 B) so every object starts
// 16-aligned. Class 0 is 64 B; each next class is the largest multiple of 16 not more
// than 1/(1 - f) times the previous one, and at least 16 more, with f the smallest
// ratio that reaches 1 MiB within 256 classes (f = 3.53%); the last class is 1 MiB.
// Classes grow by 16 B up to ~450 B, where 16 B becomes more than f of a slot, and
// geometrically after. The table is part of the region format (block-table entries
// name classes by index): kSizeClassTableId changes with it and a region records it.
//
// Internal fragmentation of a request of s stored bytes is (slot - s) / slot. Over
// sizes 64 B..1 MiB at 1-byte granularity: average 1.76% (every size equally likely)
// and maximum 3.53% for every s >= 448 B (the paper's 1.8% and 3.6%); below 448 B the
// 16-byte granularity dominates (a 65-byte object takes an 80-byte slot, 18.75%).
// FragmentationOver computes these figures from the table; the tests and the
// allocation benchmark print them.
//
// Blocks. A class's blocks are n MiB for the smallest n in [1, 16] whose tail (the
// bytes after the last whole slot) is at most 1/64 of the block, else the n with the
// least tail (the worst tail is then 3.5% of a block). Slots start at the block's
// first byte. A region must hold the metadata unit and the longest block (17 MiB).
#ifndef FARM_ALLOC_SIZE_CLASSES_H_
#define FARM_ALLOC_SIZE_CLASSES_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"

namespace farm::alloc {

inline constexpr uint32_t kSizeClassCount = 256;
inline constexpr uint64_t kMinSlotBytes = 64;
inline constexpr uint64_t kMaxSlotBytes = uint64_t{1} << 20;
inline constexpr uint64_t kBlockUnitBytes = uint64_t{1} << 20;
inline constexpr uint32_t kMaxBlockUnits = 16;

using SizeClass = uint8_t;

struct SizeClassInfo {
  uint32_t slot_bytes = 0;
  uint32_t block_units = 0;  // block length in kBlockUnitBytes
  uint32_t slots = 0;        // per block
};

// The class of a slot of at least `stored_bytes`. OutOfRange above kMaxSlotBytes.
absl::StatusOr<SizeClass> ClassForStoredBytes(uint64_t stored_bytes);
// The class for an object with `payload` bytes (application size). OutOfRange when it
// cannot fit the largest slot; the error states the limit (MaxPayloadBytes()).
absl::StatusOr<SizeClass> ClassForPayload(uint64_t payload);
// The largest payload any class holds.
uint64_t MaxPayloadBytes();

const SizeClassInfo& ClassInfo(SizeClass c);
// All slot sizes, ascending.
const std::array<uint32_t, kSizeClassCount>& SlotSizes();
// A fingerprint of the table (FNV-1a of the slot sizes), recorded in region headers.
uint64_t SizeClassTableId();

struct Fragmentation {
  double average = 0;  // mean of (slot - s) / slot over the sizes, each equally likely
  double maximum = 0;  // largest (slot - s) / slot
  uint64_t worst_size = 0;  // an s attaining it
};
// Internal fragmentation over every stored size s in [low, high] (1-byte granularity).
// Precondition: 1 <= low <= high <= kMaxSlotBytes.
Fragmentation FragmentationOver(uint64_t low, uint64_t high);

}  // namespace farm::alloc

#endif  // FARM_ALLOC_SIZE_CLASSES_H_
