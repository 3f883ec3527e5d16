#include "kv/linear/slot_format.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "farm/api/wire.h"

namespace farm::kv::linear {

absl::Status SlotLayout::Validate() const {
  if (slots_per_group < 1 || slots_per_group > kMaxSlotsPerGroup) {
    return absl::InvalidArgumentError(absl::StrFormat("slots per group must be in [1, %d], not %d",
                                                      kMaxSlotsPerGroup, slots_per_group));
  }
  if (inline_key_bytes > kMaxInlineBytes || inline_value_bytes > kMaxInlineBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("inline key and value sizes must be at most %d bytes (%d, %d)",
                                                      kMaxInlineBytes, inline_key_bytes, inline_value_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckGroup(std::span<const char> group, const SlotLayout& layout) {
  if (group.size() < layout.group_bytes()) {
    return absl::InternalError(absl::StrFormat("a slot group of %d bytes (expected %d)", group.size(), layout.group_bytes()));
  }
  const uint8_t tag = static_cast<uint8_t>(group[0]);
  if (tag == 0) return absl::OkStatus();  // never written: zeroed by its allocation
  const uint8_t version = static_cast<uint8_t>(group[1]);
  const uint16_t slots = LoadLe<uint16_t>(group.data() + 2);
  if (tag != kGroupTag || version != kGroupVersion || slots != layout.slots_per_group) {
    return absl::InternalError(absl::StrFormat("corrupt slot group (tag %d, version %d, %d slots)", tag, version, slots));
  }
  return absl::OkStatus();
}

void StampGroup(std::span<char> group, const SlotLayout& layout) {
  group[0] = static_cast<char>(kGroupTag);
  group[1] = static_cast<char>(kGroupVersion);
  StoreLe<uint16_t>(group.data() + 2, static_cast<uint16_t>(layout.slots_per_group));
}

std::span<const char> GroupSlot(std::span<const char> group, const SlotLayout& layout, uint32_t i) {
  return group.subspan(kGroupHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}

std::span<char> GroupSlot(std::span<char> group, const SlotLayout& layout, uint32_t i) {
  return group.subspan(kGroupHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}

absl::Status CheckLinearSlot(std::span<const char> slot, const SlotLayout& layout) {
  const uint8_t kind = static_cast<uint8_t>(slot[0]);
  if (kind == static_cast<uint8_t>(Kind::kTombstone)) return absl::OkStatus();
  return CheckSlot(slot, layout.AsTableLayout());
}

void WriteTombstone(std::span<char> slot) {
  std::fill(slot.begin(), slot.end(), 0);
  slot[0] = static_cast<char>(Kind::kTombstone);
}

void WriteEmpty(std::span<char> slot) { std::fill(slot.begin(), slot.end(), 0); }

}  // namespace farm::kv::linear
