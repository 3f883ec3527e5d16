// The hashtable's object formats (paper section 3.6, "chained associative hopscotch
// hashing"): buckets, overflow blocks, pair slots and out-of-line values, and the key
// hash. All integers little-endian; every object is a FaRM object (its version,
// incarnation and line versions are the layers below's business).
//
//   bucket    u16 back joint version (bv), u16 front joint version (fv),
//             u64 overflow block address, u32 its incarnation, then H/2 slots
//   block     u64 next block address, u32 its incarnation, then kSlotsPerBlock slots
//   slot      u8 kind (0 empty, 1 inline, 2 out of line), then
//               inline:      u8 key length, u8 value length, key, value (back to
//                            back; at most inline_key_bytes and inline_value_bytes)
//               out of line: u8 0, u8 0, u64 key hash, u64 value address,
//                            u32 value size, u32 value incarnation
//   value     u32 key length, u32 value length, key, value (an object of its own,
//             never modified: an update writes a new one and frees the old)
//
// Joint versions (Figure 9): bucket b's fv and bucket b+1's bv are equal whenever both
// are at rest; a transaction that writes both sets them to a new common value, so a
// lock-free READ of b and b+1 that saw one before and one after it sees them differ.
// Overflow pointers name blocks of one size (the layout's), so they carry no size.
#ifndef FARM_KV_LAYOUT_H_
#define FARM_KV_LAYOUT_H_

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"

namespace farm::kv {

inline constexpr uint32_t kBucketHeaderBytes = 16;
inline constexpr uint32_t kBlockHeaderBytes = 12;
inline constexpr uint32_t kSlotsPerBlock = 2;
inline constexpr uint32_t kSlotHeaderBytes = 3;
inline constexpr uint32_t kOutOfLineSlotBytes = kSlotHeaderBytes + 8 + 16;
inline constexpr uint32_t kValueHeaderBytes = 8;
inline constexpr uint32_t kMaxInlineBytes = 255;  // per key and per value (u8 lengths)

enum class SlotKind : uint8_t { kEmpty = 0, kInline = 1, kOutOfLine = 2 };

struct TableLayout {
  uint32_t neighbourhood = 8;      // H: a key lives in its bucket or the next
  uint32_t inline_key_bytes = 16;  // pairs with key and value within these are inline
  uint32_t inline_value_bytes = 32;

  // InvalidArgument unless H is even and in [2, 32] and inline sizes are <= 255.
  absl::Status Validate() const;
  uint32_t slots_per_bucket() const { return neighbourhood / 2; }
  uint32_t slot_bytes() const;
  uint32_t bucket_bytes() const { return kBucketHeaderBytes + slots_per_bucket() * slot_bytes(); }
  uint32_t block_bytes() const { return kBlockHeaderBytes + kSlotsPerBlock * slot_bytes(); }
  bool FitsInline(size_t key_bytes, size_t value_bytes) const {
    return key_bytes <= inline_key_bytes && value_bytes <= inline_value_bytes;
  }
};

// A stable 64-bit hash of a key (the same in every process and build).
uint64_t HashKey(absl::string_view key);

// --- Slots (a span of slot_bytes) ---

SlotKind KindOf(std::span<const char> slot);
// InternalError when the slot's bytes are not a slot of `layout` (lengths too big).
absl::Status CheckSlot(std::span<const char> slot, const TableLayout& layout);
absl::string_view InlineKey(std::span<const char> slot);
absl::string_view InlineValue(std::span<const char> slot);
uint64_t OutOfLineHash(std::span<const char> slot);
FatPtr OutOfLineValue(std::span<const char> slot);
void WriteInline(std::span<char> slot, absl::string_view key, absl::string_view value);
void WriteOutOfLine(std::span<char> slot, uint64_t hash, FatPtr value);
void ClearSlot(std::span<char> slot);
// The key's hash, whatever the slot's kind (not for empty slots).
uint64_t SlotHash(std::span<const char> slot);

// --- Buckets and blocks (their payloads) ---

uint16_t BackVersion(std::span<const char> bucket);
uint16_t FrontVersion(std::span<const char> bucket);
void SetBackVersion(std::span<char> bucket, uint16_t v);
void SetFrontVersion(std::span<char> bucket, uint16_t v);
// The first overflow block of a bucket / the next block of a block (null at the end).
FatPtr OverflowOf(std::span<const char> bucket, const TableLayout& layout);
void SetOverflow(std::span<char> bucket, FatPtr block);
FatPtr NextOf(std::span<const char> block, const TableLayout& layout);
void SetNext(std::span<char> block, FatPtr next);
std::span<char> BucketSlot(std::span<char> bucket, const TableLayout& layout, uint32_t i);
std::span<const char> BucketSlot(std::span<const char> bucket, const TableLayout& layout, uint32_t i);
std::span<char> BlockSlot(std::span<char> block, const TableLayout& layout, uint32_t i);
std::span<const char> BlockSlot(std::span<const char> block, const TableLayout& layout, uint32_t i);

// --- Out-of-line values ---

uint32_t ValueObjectBytes(absl::string_view key, absl::string_view value);
void WriteValueObject(std::span<char> object, absl::string_view key, absl::string_view value);
// InternalError when the lengths do not fit the object.
absl::StatusOr<std::pair<absl::string_view, absl::string_view>> ParseValueObject(
    std::span<const char> object);

}  // namespace farm::kv

#endif  // FARM_KV_LAYOUT_H_
