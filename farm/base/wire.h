// Wire encoding: little-endian fixed-width integers in byte strings, the one encoding of
// every message and record the project defines (tx log records and messages, alloc's
// and kv's messages, kv's directory and object formats). Headers of hot-path messages
// are fixed layouts of these; a decoder checks sizes before it reads (WireReader's
// getters fail at the end instead of reading past it) and checks its format tag.
#ifndef FARM_BASE_WIRE_H_
#define FARM_BASE_WIRE_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace farm {

template <typename T>
concept WireInteger = std::is_integral_v<T> || std::is_enum_v<T>;

namespace wire_internal {
template <WireInteger T>
T ToLittle(T v) {
  if constexpr (std::endian::native == std::endian::little || sizeof(T) == 1) {
    return v;
  } else {
    using U =
        std::make_unsigned_t<std::conditional_t<std::is_enum_v<T>, std::underlying_type_t<T>, T>>;
    U u;
    std::memcpy(&u, &v, sizeof(u));
    if constexpr (sizeof(U) == 2) u = __builtin_bswap16(u);
    if constexpr (sizeof(U) == 4) u = __builtin_bswap32(u);
    if constexpr (sizeof(U) == 8) u = __builtin_bswap64(u);
    std::memcpy(&v, &u, sizeof(u));
    return v;
  }
}
}  // namespace wire_internal

// The value at p (sizeof(T) bytes, any alignment).
template <WireInteger T>
T LoadLe(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return wire_internal::ToLittle(v);
}

template <WireInteger T>
void StoreLe(char* p, T v) {
  v = wire_internal::ToLittle(v);
  std::memcpy(p, &v, sizeof(v));
}

// Appends values to a string: its own (Take) or one given.
class WireWriter {
 public:
  WireWriter() = default;
  explicit WireWriter(std::string* out) : out_(out) {}
  WireWriter(const WireWriter&) = delete;
  WireWriter& operator=(const WireWriter&) = delete;

  template <WireInteger T>
  WireWriter& Put(T v) {
    char bytes[sizeof(T)];
    StoreLe(bytes, v);
    out_->append(bytes, sizeof(T));
    return *this;
  }
  WireWriter& Bytes(absl::string_view bytes) {
    out_->append(bytes.data(), bytes.size());
    return *this;
  }
  std::string Take() { return std::move(*out_); }

 private:
  std::string own_;
  std::string* out_ = &own_;
};

// Reads values from the front of a byte string; every getter fails (false, nothing
// consumed) where too few bytes are left.
class WireReader {
 public:
  explicit WireReader(absl::string_view in) : in_(in) {}

  template <WireInteger T>
  bool Get(T* v) {
    if (in_.size() < sizeof(T)) return false;
    *v = LoadLe<T>(in_.data());
    in_.remove_prefix(sizeof(T));
    return true;
  }
  // The next n bytes (a view into the input).
  bool Bytes(size_t n, absl::string_view* bytes) {
    if (in_.size() < n) return false;
    *bytes = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }
  size_t left() const { return in_.size(); }

 private:
  absl::string_view in_;
};

}  // namespace farm

#endif  // FARM_BASE_WIRE_H_
