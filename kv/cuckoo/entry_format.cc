#include "kv/cuckoo/entry_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "farm/api/wire.h"
#include "kv/layout.h"

namespace farm::kv::cuckoo {
namespace {

uint64_t Checksum(uint32_t version, uint32_t key_bytes, uint32_t value_bytes, absl::string_view key,
                  absl::string_view value) {
  const uint64_t lengths = (uint64_t{key_bytes} << 32) | value_bytes;
  return HashKey(key) * 0x9e3779b97f4a7c15ull ^ HashKey(value) ^
         (uint64_t{version} * 0xc2b2ae3d27d4eb4full) ^ (lengths * 0x165667b19e3779f9ull);
}

}  // namespace

uint64_t EncodeIte(const EntryRef& ref, uint8_t filter) {
  return (uint64_t{ref.table & 0xff} << 56) | (uint64_t{ref.size_class & 3} << 54) |
         (uint64_t{ref.entry & kMaxEntryIndex} << 32) |
         (uint64_t{ref.version & kVersionMask} << 8) | filter;
}

EntryRef DecodeIte(uint64_t ite) {
  return EntryRef{static_cast<uint32_t>(ite >> 56), static_cast<uint32_t>(ite >> 54) & 3,
                  static_cast<uint32_t>(ite >> 32) & kMaxEntryIndex,
                  static_cast<uint32_t>(ite >> 8) & kVersionMask};
}

std::optional<uint32_t> ClassFor(size_t key_bytes, size_t value_bytes) {
  const size_t need = kEntryHeaderBytes + key_bytes + value_bytes;
  for (uint32_t c = 0; c < kSizeClasses; ++c) {
    if (need <= kClassBytes[c]) return c;
  }
  return std::nullopt;
}

size_t EncodeEntry(uint32_t version, absl::string_view key, absl::string_view value,
                   std::span<char> out) {
  const uint32_t kb = static_cast<uint32_t>(key.size());
  const uint32_t vb = static_cast<uint32_t>(value.size());
  StoreLe<uint64_t>(out.data(), StateWord(version, 0));
  StoreLe<uint64_t>(out.data() + 8, (uint64_t{kb} << 32) | vb);
  StoreLe<uint64_t>(out.data() + 16, Checksum(version, kb, vb, key, value));
  if (kb) std::memcpy(out.data() + kEntryHeaderBytes, key.data(), kb);
  if (vb) std::memcpy(out.data() + kEntryHeaderBytes + kb, value.data(), vb);
  return kEntryHeaderBytes + kb + vb;
}

absl::Status ParseEntry(std::span<const char> bytes, uint32_t class_bytes, EntryView& view) {
  if (bytes.size() < kEntryHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a data entry read of ", bytes.size(), " bytes"));
  }
  view.state = LoadLe<uint64_t>(bytes.data());
  const uint64_t lengths = LoadLe<uint64_t>(bytes.data() + 8);
  view.key_bytes = static_cast<uint32_t>(lengths >> 32);
  view.value_bytes = static_cast<uint32_t>(lengths);
  // Lengths over the class come from a torn or recycled read: the caller re-reads.
  if (uint64_t{kEntryHeaderBytes} + view.key_bytes + view.value_bytes > class_bytes) {
    view.complete = view.key_read = false;
    view.key = view.value = {};
    return absl::OkStatus();
  }
  const size_t key_end = kEntryHeaderBytes + size_t{view.key_bytes};
  view.key_read = key_end <= bytes.size();
  view.key = view.key_read ? absl::string_view(bytes.data() + kEntryHeaderBytes, view.key_bytes)
                           : absl::string_view();
  view.complete = key_end + view.value_bytes <= bytes.size();
  view.value = view.complete ? absl::string_view(bytes.data() + key_end, view.value_bytes)
                             : absl::string_view();
  return absl::OkStatus();
}

bool ChecksumMatches(std::span<const char> bytes, const EntryView& view) {
  if (!view.complete) return false;
  return LoadLe<uint64_t>(bytes.data() + 16) ==
         Checksum(StateVersion(view.state), view.key_bytes, view.value_bytes, view.key, view.value);
}

}  // namespace farm::kv::cuckoo
