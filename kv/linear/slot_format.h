// The linear-probing table's object formats: slot groups and slots. All integers
// little-endian; every group is a FaRM object (its version, incarnation and line
// versions are the layers below's business), read whole by lock-free READs and
// transactions alike.
//
//   group     u8 tag (0: never written, all slots empty; kGroupTag once written),
//             u8 format version (kGroupVersion), u16 slot count, then `slots` slots
//   slot      u8 kind (0 empty, 1 inline, 2 out of line, 3 tombstone), then
//               inline:      u8 key length, u8 value length, key, value (back to back;
//                            at most inline_key_bytes and inline_value_bytes)
//               out of line: u8 0, u8 0, u64 key hash, u64 value address,
//                            u32 value size, u32 value incarnation
//               tombstone:   nothing (a removed pair: probes pass it, inserts reuse it)
//   value     kv/layout.h's value object: u32 key length, u32 value length, key, value
//             (never modified: an update writes a new one and frees the old)
//
// Inline and out-of-line slots are the hopscotch table's slot format (kv/layout.h),
// whose accessors this layout uses; the tombstone kind is this layout's own.
#ifndef FARM_KV_LINEAR_SLOT_FORMAT_H_
#define FARM_KV_LINEAR_SLOT_FORMAT_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kv/layout.h"

namespace farm::kv::linear {

inline constexpr uint32_t kGroupHeaderBytes = 4;
inline constexpr uint8_t kGroupTag = 0x4c;  // 'L'
inline constexpr uint8_t kGroupVersion = 1;
inline constexpr uint32_t kMaxSlotsPerGroup = 64;

enum class Kind : uint8_t { kEmpty = 0, kInline = 1, kOutOfLine = 2, kTombstone = 3 };

struct SlotLayout {
  uint32_t slots_per_group = 4;    // G: slots per FaRM object
  uint32_t inline_key_bytes = 16;  // pairs with key and value within these are inline
  uint32_t inline_value_bytes = 32;

  // InvalidArgument unless G is in [1, kMaxSlotsPerGroup] and inline sizes are <= 255.
  absl::Status Validate() const;
  // The larger of an inline slot and an out-of-line one (kv/layout.h's slot sizes).
  uint32_t slot_bytes() const {
    const uint32_t inline_bytes = kSlotHeaderBytes + inline_key_bytes + inline_value_bytes;
    return inline_bytes > kOutOfLineSlotBytes ? inline_bytes : kOutOfLineSlotBytes;
  }
  uint32_t group_bytes() const { return kGroupHeaderBytes + slots_per_group * slot_bytes(); }
  bool FitsInline(size_t key_bytes, size_t value_bytes) const {
    return key_bytes <= inline_key_bytes && value_bytes <= inline_value_bytes;
  }
  // The hopscotch slot accessors' view of these sizes (CheckSlot).
  TableLayout AsTableLayout() const { return TableLayout{2, inline_key_bytes, inline_value_bytes}; }
};

// InternalError when the group's header is not a group of `layout`'s.
absl::Status CheckGroup(std::span<const char> group, const SlotLayout& layout);
// Marks a group as written (its tag and version); every transaction that writes one calls it.
void StampGroup(std::span<char> group, const SlotLayout& layout);

std::span<const char> GroupSlot(std::span<const char> group, const SlotLayout& layout, uint32_t i);
std::span<char> GroupSlot(std::span<char> group, const SlotLayout& layout, uint32_t i);

inline Kind KindOfSlot(std::span<const char> slot) { return static_cast<Kind>(slot[0]); }
// InternalError when the slot's bytes are not a slot of `layout` (unknown kind, lengths too big).
absl::Status CheckLinearSlot(std::span<const char> slot, const SlotLayout& layout);
void WriteTombstone(std::span<char> slot);
void WriteEmpty(std::span<char> slot);

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_SLOT_FORMAT_H_
