// The chained layout's object formats (Mercury, SYSTOR'13, on FaRM objects). All
// integers little-endian; every object is a FaRM object whose version, incarnation and
// line versions are the layers below's business: the FaRM version of a bucket head IS
// the bucket's lock word (Mercury's bucket-lock co-located with the entry), so a READ
// of the head brings the lock, the moved bit and the first pairs in one access.
//
//   bucket    (a head, or an overflow block of a head's chain; the same size)
//             u8 tag (0: never written = empty, not moved; kBucketTag once written),
//             u8 flags (kMovedFlag: heads only, Mercury's "hasmoved" bit),
//             u16 pairs in the whole chain (heads only; blocks 0),
//             u32 0, u64 next block address, u32 its size, u32 its incarnation,
//             then `slots_per_bucket` slots
//   slot      kv/layout.h's slot (empty, inline, out of line)
//   value     kv/layout.h's value object (never modified: replaced and freed)
//   root      a partition's table state, in object 0 of its catalog shard (same size
//             as a bucket): u8 tag (0: never written = the initial table, no
//             expansion), u8 0, u16 0, u32 expansions completed, then two tables,
//             current and next (next null: not expanding), each
//             u64 directory address, u32 directory size, u32 incarnation, u64 buckets
//   directory a table of an expansion: u64 buckets, u32 runs, u32 0, then per run
//             u64 first address, u32 incarnation, u32 stride, u32 count, u32 0
//             (the table's buckets in order; immutable; freed with the table)
//
// A bucket's pairs are kept packed in chain order: the head's slots first, then each
// block's; only the chain's last object has empty slots and a chain has no empty
// block. Every transaction that changes a bucket (any slot of its chain) writes its
// head, so the head's FaRM version changes with any change of the chain.
#ifndef FARM_KV_CHAINED_BUCKET_FORMAT_H_
#define FARM_KV_CHAINED_BUCKET_FORMAT_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "farm/api/farm.h"
#include "kv/layout.h"

namespace farm::kv::chained {

inline constexpr uint8_t kBucketTag = 0x43;  // 'C'
inline constexpr uint8_t kRootTag = 0x52;    // 'R'
inline constexpr uint8_t kMovedFlag = 0x01;
inline constexpr uint32_t kBucketHeaderBytes = 24;
inline constexpr uint32_t kRootBytes = 8 + 2 * 24;
inline constexpr uint32_t kMaxSlotsPerBucket = 16;

struct BucketLayout {
  uint32_t slots_per_bucket = 2;   // S: pairs in a head (and in each overflow block)
  uint32_t inline_key_bytes = 16;  // pairs with key and value within these are inline
  uint32_t inline_value_bytes = 32;

  // InvalidArgument unless S is in [1, kMaxSlotsPerBucket] and inline sizes <= 255.
  absl::Status Validate() const;
  uint32_t slot_bytes() const {
    const uint32_t inline_bytes = kSlotHeaderBytes + inline_key_bytes + inline_value_bytes;
    return inline_bytes > kOutOfLineSlotBytes ? inline_bytes : kOutOfLineSlotBytes;
  }
  // A bucket's payload; at least kRootBytes so that object 0 of a shard holds a root.
  uint32_t bucket_bytes() const {
    const uint32_t b = kBucketHeaderBytes + slots_per_bucket * slot_bytes();
    return b > kRootBytes ? b : kRootBytes;
  }
  bool FitsInline(size_t key_bytes, size_t value_bytes) const {
    return key_bytes <= inline_key_bytes && value_bytes <= inline_value_bytes;
  }
  // kv/layout.h's view of the inline sizes (for CheckSlot).
  TableLayout AsTableLayout() const { return TableLayout{2, inline_key_bytes, inline_value_bytes}; }
};

// --- Buckets (heads and blocks) ---

// InternalError when `bucket` is written but not a bucket of `layout`, or a slot is bad.
absl::Status CheckBucket(std::span<const char> bucket, const BucketLayout& layout);
bool IsMoved(std::span<const char> bucket);
uint32_t ChainPairs(std::span<const char> head);
FatPtr NextBlock(std::span<const char> bucket);
std::span<const char> BucketSlotAt(std::span<const char> bucket, const BucketLayout& layout, uint32_t i);
std::span<char> BucketSlotAt(std::span<char> bucket, const BucketLayout& layout, uint32_t i);

// Writes a whole bucket header (stamps the tag; flags, chain pairs, next block).
void WriteBucketHeader(std::span<char> bucket, uint8_t flags, uint32_t chain_pairs, FatPtr next);

// --- Roots and directories ---

// One table of a partition as the root names it: its directory (null: the initial
// table, the catalog shard's objects 1..n-1) and its bucket count.
struct TableRef {
  FatPtr directory;
  uint64_t buckets = 0;
  bool operator==(const TableRef&) const = default;
};

struct RootState {
  uint32_t expansions = 0;
  TableRef current;  // directory null and buckets 0 in a never-written root
  TableRef next;     // buckets 0: not expanding
  bool expanding() const { return next.buckets != 0; }
};

RootState ReadRoot(std::span<const char> root);
void WriteRoot(std::span<char> root, const RootState& state);

// A run of a table's buckets: `count` objects `stride` bytes apart from `first`.
struct BucketRun {
  Addr first;
  uint32_t incarnation = 0;
  uint32_t stride = 0;
  uint32_t count = 0;
};

uint32_t DirectoryBytes(size_t runs);

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_BUCKET_FORMAT_H_
