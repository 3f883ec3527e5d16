// Object layout: how an object of the shared address space sits in region memory.
//
//   offset 0   uint64 version      bits 1..0 lock mode (0 = unlocked), bits 63..2 count
//   offset 8   uint64 incarnation  bit 0 allocated, bits 63..1 incarnation
//   offset 16  payload, interrupted by a kLineVersionBytes copy of the version's low
//              bits at every 64-byte boundary of region memory inside the object
//
// Objects start at kObjectAlignment (16) byte offsets, so the 16-byte header never
// straddles a cache line and both header words can take 8-byte CAS and FETCH_ADD. The
// cache lines that carry versions are the hardware's (64-byte boundaries of the
// region), not lines counted from the object's start: what a one-sided READ sees
// atomically is a hardware line, so each hardware line of an object other than the one
// holding its header carries a version (paper Figure: "V_c1 ... V_c2"). The stored size
// of an object therefore depends on where it starts; MaxStoredBytes is the worst case
// over the four possible starts within a line, and what the allocator reserves.
//
// The allocated bit and incarnation share a word so that freeing is one CAS
// (allocated, n) -> (free, n + 1): a stale fat pointer, a double free and a reader of a
// reused slot all see the incarnation move.
//
// One-sided objects (farm/api/one_sided.h) take slots of the same allocator and the same
// incarnation word, but no versions: the application keeps them consistent itself.
//
//   offset 0   uint64 raw header word, in place of the version:
//                bits 1..0    3 — both lock bits; never a transactional version, so every
//                             transactional path sees it (CheckCopy: kOneSided; LOCK:
//                             refused)
//                bits 7..2    flags: kRawLost, kRawDying, kRawLocked (bits 7..5 zero)
//                bits 15..8   kRawTag
//                bits 39..16  payload size
//                bits 63..40  the low 24 bits of the incarnation (so that one CAS of the
//                             word checks the object's identity too)
//   offset 8   uint64 incarnation word, as for every object
//   offset 16  payload: `size` contiguous bytes, no line versions
//
// Invariants (relied on by tx/one_sided.cc, tx/participant.cc, alloc/allocator.cc):
//   1. A raw header word is written only by the commit of a kAllocRaw entry (live, zero
//      payload), by rawFree's CAS live -> dying, by a kFreeRaw lock (| kRawLocked, undone
//      on abort), by AdoptRegion (| kRawLost: a new primary's copy holds none of the
//      one-sided writes of the old one), and replaced by a plain version when a
//      kFreeRaw commits.
//   2. Only a live word (no flag) admits one-sided ops; a word with kRawLost answers
//      DataLoss, kRawDying or kRawLocked FailedPrecondition (being freed).
//   3. A transactional version never has both lock bits set (kAnyVersion, all ones, is
//      never stored and has another tag), so IsRawHeaderWord tells the two kinds apart.
#ifndef FARM_BASE_OBJECT_LAYOUT_H_
#define FARM_BASE_OBJECT_LAYOUT_H_

#include <atomic>
#include <cstdint>

namespace farm {

inline constexpr uint64_t kCacheLineBytes = 64;
inline constexpr uint64_t kObjectAlignment = 16;
inline constexpr uint64_t kObjectHeaderBytes = 16;
inline constexpr uint64_t kLineVersionBytes = 2;  // l = 16 bits
inline constexpr uint64_t kVersionOffset = 0;
inline constexpr uint64_t kIncarnationOffset = 8;

// --- One-sided objects' header word (see above) ---
inline constexpr uint64_t kRawTag = 0xA5;
inline constexpr uint64_t kRawLost = uint64_t{1} << 2;    // its primary changed: data lost
inline constexpr uint64_t kRawDying = uint64_t{1} << 3;   // rawFree under way
inline constexpr uint64_t kRawLocked = uint64_t{1} << 4;  // a kFreeRaw holds it
inline constexpr uint64_t kRawFlags = kRawLost | kRawDying | kRawLocked;
inline constexpr uint32_t kMaxRawPayload = (uint32_t{1} << 24) - 1;

constexpr uint64_t RawHeaderWord(uint32_t size, uint32_t incarnation, uint64_t flags = 0) {
  return (uint64_t{incarnation & 0xFFFFFFu} << 40) | (uint64_t{size & kMaxRawPayload} << 16) |
         (kRawTag << 8) | (flags & kRawFlags) | 3;
}
constexpr bool IsRawHeaderWord(uint64_t word) { return (word & 0xFF03) == ((kRawTag << 8) | 3); }
constexpr uint32_t RawSizeOf(uint64_t word) { return static_cast<uint32_t>((word >> 16) & kMaxRawPayload); }
constexpr uint64_t RawFlagsOf(uint64_t word) { return word & kRawFlags; }
// Whether `word` names the incarnation whose low 32 bits are `incarnation`.
constexpr bool RawIncarnationMatches(uint64_t word, uint32_t incarnation) {
  return (word >> 40) == (incarnation & 0xFFFFFFu);
}
static_assert(IsRawHeaderWord(RawHeaderWord(1u << 20, 0xFFFFFFFFu, kRawFlags)));
static_assert(!IsRawHeaderWord(~uint64_t{0}));

// Incarnation word <-> (allocated, incarnation).
constexpr uint64_t IncarnationWord(uint64_t incarnation, bool allocated) {
  return (incarnation << 1) | (allocated ? 1 : 0);
}
constexpr bool IsAllocated(uint64_t incarnation_word) { return (incarnation_word & 1) != 0; }
constexpr uint64_t IncarnationOf(uint64_t incarnation_word) { return incarnation_word >> 1; }
// The low 32 bits a FatPtr carries.
constexpr uint32_t FatIncarnation(uint64_t incarnation) { return static_cast<uint32_t>(incarnation); }
// The full incarnation a FatPtr's `fat` names, given the slot's `current` one: the
// value with those low 32 bits nearest `current` (never below 0). A copy rebuilt from the
// log (or a backup's copy) can be behind the primary's slot by allocations that aborted
// (each free of one moves the incarnation on, unlogged and unreplicated), so a committed
// entry's pointer, not the copy, says which incarnation the object has.
constexpr uint64_t IncarnationNamed(uint64_t current, uint32_t fat) {
  const int64_t delta = static_cast<int32_t>(fat - FatIncarnation(current));
  if (delta < 0 && static_cast<uint64_t>(-delta) > current) return current + static_cast<uint32_t>(delta);
  return current + static_cast<uint64_t>(delta);
}

// Number of 64-byte boundaries b with offset < b < offset + length.
constexpr uint64_t LineBoundariesInside(uint64_t offset, uint64_t length) {
  if (length == 0) return 0;
  const uint64_t last = offset + length - 1;  // last byte
  return last / kCacheLineBytes - offset / kCacheLineBytes;
}

// Bytes an object with `payload` bytes occupies when it starts at `offset` (16-aligned):
// header, payload, and a line version at every line boundary it crosses.
constexpr uint64_t StoredBytes(uint64_t offset, uint64_t payload) {
  uint64_t length = kObjectHeaderBytes + payload;
  // Each version pushes the payload on and may make it cross one more boundary.
  uint64_t versions = 0;
  while (true) {
    const uint64_t need = LineBoundariesInside(offset, length + versions * kLineVersionBytes);
    if (need == versions) break;
    versions = need;
  }
  return length + versions * kLineVersionBytes;
}

// The most bytes `payload` can occupy over every 16-aligned start: what a slot must hold.
constexpr uint64_t MaxStoredBytes(uint64_t payload) {
  uint64_t most = 0;
  for (uint64_t start = 0; start < kCacheLineBytes; start += kObjectAlignment) {
    const uint64_t s = StoredBytes(start, payload);
    if (s > most) most = s;
  }
  return most;
}

// Atomic access to a header word in region memory (which other processes and the NIC
// also access). `word` must be 8-aligned.
inline uint64_t LoadHeaderWord(const char* word, std::memory_order order = std::memory_order_acquire) {
  // atomic_ref<const T> is C++26; the load does not write.
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<char*>(word))).load(order);
}
inline void StoreHeaderWord(char* word, uint64_t value,
                            std::memory_order order = std::memory_order_release) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(word)).store(value, order);
}
inline bool CasHeaderWord(char* word, uint64_t& expected, uint64_t desired) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(word))
      .compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                               std::memory_order_acquire);
}

}  // namespace farm

#endif  // FARM_BASE_OBJECT_LAYOUT_H_
