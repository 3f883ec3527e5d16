#include "kv/layout.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "farm/api/wire.h"

namespace farm::kv {
namespace {


// An address and incarnation (12 bytes) as a pointer to an object of `size` bytes.
FatPtr LoadShortPtr(const char* p, uint32_t size) {
  const uint64_t raw = LoadLe<uint64_t>(p);
  if (raw == 0) return FatPtr{};
  return FatPtr{Addr::FromRaw(raw), size, LoadLe<uint32_t>(p + 8)};
}

void StoreShortPtr(char* p, FatPtr ptr) {
  StoreLe<uint64_t>(p, ptr.addr.raw());
  StoreLe<uint32_t>(p + 8, ptr.incarnation);
}

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

absl::Status TableLayout::Validate() const {
  if (neighbourhood < 2 || neighbourhood > 32 || neighbourhood % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("neighbourhood H must be even and in [2, 32], not %d", neighbourhood));
  }
  if (inline_key_bytes > kMaxInlineBytes || inline_value_bytes > kMaxInlineBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "inline key and value sizes must be at most %d bytes (%d, %d)", kMaxInlineBytes,
        inline_key_bytes, inline_value_bytes));
  }
  return absl::OkStatus();
}

uint32_t TableLayout::slot_bytes() const {
  return std::max(kSlotHeaderBytes + inline_key_bytes + inline_value_bytes, kOutOfLineSlotBytes);
}

uint64_t HashKey(absl::string_view key) {
  // 8 bytes at a time, each word mixed in; the length seeds it so "" and "\0" differ.
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (key.size() * 0xc2b2ae3d27d4eb4full);
  size_t i = 0;
  for (; i + 8 <= key.size(); i += 8) h = Mix(h ^ LoadLe<uint64_t>(key.data() + i)) + 0x165667b19e3779f9ull;
  uint64_t tail = 0;  // the last bytes, little-endian like the words
  for (size_t j = 0; i + j < key.size(); ++j) tail |= uint64_t{static_cast<uint8_t>(key[i + j])} << (8 * j);
  return Mix(h ^ tail ^ (uint64_t{0xa5} << 56));
}

SlotKind KindOf(std::span<const char> slot) { return static_cast<SlotKind>(slot[0]); }

absl::Status CheckSlot(std::span<const char> slot, const TableLayout& layout) {
  const uint8_t kind = static_cast<uint8_t>(slot[0]);
  const uint8_t key = static_cast<uint8_t>(slot[1]);
  const uint8_t value = static_cast<uint8_t>(slot[2]);
  if (kind > 2 || (kind == 1 && (key > layout.inline_key_bytes || value > layout.inline_value_bytes))) {
    return absl::InternalError(absl::StrFormat(
        "corrupt hashtable slot (kind %d, key %d B, value %d B)", kind, key, value));
  }
  return absl::OkStatus();
}

absl::string_view InlineKey(std::span<const char> slot) {
  return absl::string_view(slot.data() + kSlotHeaderBytes, static_cast<uint8_t>(slot[1]));
}

absl::string_view InlineValue(std::span<const char> slot) {
  const uint8_t key_len = static_cast<uint8_t>(slot[1]);
  return absl::string_view(slot.data() + kSlotHeaderBytes + key_len, static_cast<uint8_t>(slot[2]));
}

uint64_t OutOfLineHash(std::span<const char> slot) { return LoadLe<uint64_t>(slot.data() + kSlotHeaderBytes); }

FatPtr OutOfLineValue(std::span<const char> slot) {
  const char* p = slot.data() + kSlotHeaderBytes + 8;
  const uint64_t raw = LoadLe<uint64_t>(p);
  return FatPtr{Addr::FromRaw(raw), LoadLe<uint32_t>(p + 8), LoadLe<uint32_t>(p + 12)};
}

void WriteInline(std::span<char> slot, absl::string_view key, absl::string_view value) {
  std::fill(slot.begin(), slot.end(), 0);
  slot[0] = static_cast<char>(SlotKind::kInline);
  slot[1] = static_cast<char>(key.size());
  slot[2] = static_cast<char>(value.size());
  // Key and value packed back to back: they fit the inline areas together.
  std::memcpy(slot.data() + kSlotHeaderBytes, key.data(), key.size());
  std::memcpy(slot.data() + kSlotHeaderBytes + key.size(), value.data(), value.size());
}

void WriteOutOfLine(std::span<char> slot, uint64_t hash, FatPtr value) {
  std::fill(slot.begin(), slot.end(), 0);
  slot[0] = static_cast<char>(SlotKind::kOutOfLine);
  char* p = slot.data() + kSlotHeaderBytes;
  StoreLe<uint64_t>(p, hash);
  StoreLe<uint64_t>(p + 8, value.addr.raw());
  StoreLe<uint32_t>(p + 16, value.size);
  StoreLe<uint32_t>(p + 20, value.incarnation);
}

void ClearSlot(std::span<char> slot) { std::fill(slot.begin(), slot.end(), 0); }

uint64_t SlotHash(std::span<const char> slot) {
  return KindOf(slot) == SlotKind::kOutOfLine ? OutOfLineHash(slot) : HashKey(InlineKey(slot));
}

uint16_t BackVersion(std::span<const char> bucket) { return LoadLe<uint16_t>(bucket.data()); }
uint16_t FrontVersion(std::span<const char> bucket) { return LoadLe<uint16_t>(bucket.data() + 2); }
void SetBackVersion(std::span<char> bucket, uint16_t v) { StoreLe<uint16_t>(bucket.data(), v); }
void SetFrontVersion(std::span<char> bucket, uint16_t v) { StoreLe<uint16_t>(bucket.data() + 2, v); }

FatPtr OverflowOf(std::span<const char> bucket, const TableLayout& layout) {
  return LoadShortPtr(bucket.data() + 4, layout.block_bytes());
}
void SetOverflow(std::span<char> bucket, FatPtr block) { StoreShortPtr(bucket.data() + 4, block); }
FatPtr NextOf(std::span<const char> block, const TableLayout& layout) {
  return LoadShortPtr(block.data(), layout.block_bytes());
}
void SetNext(std::span<char> block, FatPtr next) { StoreShortPtr(block.data(), next); }

std::span<char> BucketSlot(std::span<char> bucket, const TableLayout& layout, uint32_t i) {
  return bucket.subspan(kBucketHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}
std::span<const char> BucketSlot(std::span<const char> bucket, const TableLayout& layout, uint32_t i) {
  return bucket.subspan(kBucketHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}
std::span<char> BlockSlot(std::span<char> block, const TableLayout& layout, uint32_t i) {
  return block.subspan(kBlockHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}
std::span<const char> BlockSlot(std::span<const char> block, const TableLayout& layout, uint32_t i) {
  return block.subspan(kBlockHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}

uint32_t ValueObjectBytes(absl::string_view key, absl::string_view value) {
  return static_cast<uint32_t>(kValueHeaderBytes + key.size() + value.size());
}

void WriteValueObject(std::span<char> object, absl::string_view key, absl::string_view value) {
  StoreLe<uint32_t>(object.data(), static_cast<uint32_t>(key.size()));
  StoreLe<uint32_t>(object.data() + 4, static_cast<uint32_t>(value.size()));
  std::memcpy(object.data() + kValueHeaderBytes, key.data(), key.size());
  std::memcpy(object.data() + kValueHeaderBytes + key.size(), value.data(), value.size());
}

absl::StatusOr<std::pair<absl::string_view, absl::string_view>> ParseValueObject(
    std::span<const char> object) {
  if (object.size() < kValueHeaderBytes) return absl::InternalError("value object too short");
  const uint64_t key = LoadLe<uint32_t>(object.data());
  const uint64_t value = LoadLe<uint32_t>(object.data() + 4);
  if (kValueHeaderBytes + key + value > object.size()) {
    return absl::InternalError(absl::StrFormat("corrupt value object (%d + %d bytes in %d)", key,
                                               value, object.size()));
  }
  const char* p = object.data() + kValueHeaderBytes;
  return std::make_pair(absl::string_view(p, key), absl::string_view(p + key, value));
}

}  // namespace farm::kv
