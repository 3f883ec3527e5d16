#include "tools/ycsb/record_format.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "tools/ycsb/random.h"

namespace farm::ycsb {
namespace {

constexpr char kPrefix[] = "user";
constexpr size_t kPrefixBytes = sizeof(kPrefix) - 1;
constexpr char kHex[] = "0123456789abcdef";

// A bijection on the integers [0, 2^bits) for 32 <= bits <= 64: an add, then
// xorshift-multiply rounds, each invertible modulo 2^bits (a right xorshift of a
// bits-wide value, a multiplication by an odd constant).
uint64_t MixBits(uint64_t x, int bits) {
  const uint64_t mask = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
  const int s = bits / 2;
  x = (x + 0x9e3779b97f4a7c15ULL) & mask;
  x ^= x >> s;
  x = (x * 0xbf58476d1ce4e5b9ULL) & mask;
  x ^= x >> s;
  x = (x * 0x94d049bb133111ebULL) & mask;
  x ^= x >> s;
  return x;
}

}  // namespace

absl::StatusOr<RecordFormat> RecordFormat::Create(size_t key_size, size_t value_size) {
  if (key_size != 0 && (key_size < kMinFixedKeyBytes || key_size > kMaxKeyBytes)) {
    return absl::InvalidArgumentError(absl::StrCat("key size ", key_size,
                                                   " is not 0 (variable) or in [",
                                                   kMinFixedKeyBytes, ", ", kMaxKeyBytes, "]"));
  }
  if (value_size == 0) return absl::InvalidArgumentError("value size must be at least 1 byte");
  return RecordFormat(key_size, value_size);
}

RecordFormat::RecordFormat(size_t key_size, size_t value_size)
    : key_size_(key_size), value_size_(value_size) {
  mix_bits_ =
      key_size == 0 ? 64 : static_cast<int>(std::min<size_t>(64, 4 * (key_size - kPrefixBytes)));
  key_space_ = mix_bits_ >= 63 ? std::numeric_limits<int64_t>::max() : int64_t{1} << mix_bits_;
}

absl::string_view RecordFormat::Key(int64_t keynum, absl::Span<char> out) const {
  const uint64_t mixed = MixBits(static_cast<uint64_t>(keynum), mix_bits_);
  std::memcpy(out.data(), kPrefix, kPrefixBytes);
  if (key_size_ == 0) {
    const std::to_chars_result r =
        std::to_chars(out.data() + kPrefixBytes, out.data() + kVariableKeyMaxBytes, mixed);
    return absl::string_view(out.data(), static_cast<size_t>(r.ptr - out.data()));
  }
  // Hex digits, least significant last, zero-padded on the left.
  uint64_t v = mixed;
  for (size_t i = key_size_; i > kPrefixBytes; --i) {
    out[i - 1] = kHex[v & 0xf];
    v >>= 4;
  }
  return absl::string_view(out.data(), key_size_);
}

absl::string_view RecordFormat::Value(int64_t keynum, uint64_t salt, absl::Span<char> out) const {
  const size_t tag = std::min(kTagBytes, value_size_);
  uint64_t k = static_cast<uint64_t>(keynum);
  for (size_t i = 0; i < tag; ++i, k >>= 4) out[i] = kHex[k & 0xf];
  // Printable filler (' ' .. '~'), eight bytes per mix.
  uint64_t state = Mix64(salt ^ (static_cast<uint64_t>(keynum) * 0x9e3779b97f4a7c15ULL));
  for (size_t i = tag; i < value_size_; i += 8) {
    uint64_t bits = Mix64(state++);
    const size_t n = std::min<size_t>(8, value_size_ - i);
    for (size_t j = 0; j < n; ++j, bits >>= 8)
      out[i + j] = static_cast<char>(' ' + (bits & 0xff) % 95);
  }
  return absl::string_view(out.data(), value_size_);
}

bool RecordFormat::ValueBelongsTo(int64_t keynum, absl::string_view value) const {
  if (value.size() != value_size_) return false;
  const size_t tag = std::min(kTagBytes, value_size_);
  uint64_t k = static_cast<uint64_t>(keynum);
  for (size_t i = 0; i < tag; ++i, k >>= 4) {
    if (value[i] != kHex[k & 0xf]) return false;
  }
  return true;
}

}  // namespace farm::ycsb
