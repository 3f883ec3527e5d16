// RecordFormat: the bytes of a YCSB record's key and value, built into caller-provided
// buffers (no allocation).
//
// Keys. YCSB names record k "user" + hash(k) (insertorder=hashed) and relies on the
// hash not colliding. Here the hash is a bijection, so every record has its own key:
//   key_size 0:        "user" + decimal of Mix64(k)    (YCSB's shape, 5..24 bytes)
//   key_size 12..250:  exactly key_size bytes: "user" + a bijective mix of k on
//                      b = min(64, 4 * (key_size - 4)) bits, in hex, zero-padded;
//                      record numbers must be below 2^b (key_space()).
// Values. value_size bytes (YCSB: fieldcount fields of fieldlength bytes, concatenated).
// The first min(16, value_size) bytes are hex digits of the record number, lowest digit
// first, so a reader can tell that a value belongs to its key (ValueBelongsTo); the rest
// is printable filler that depends on a salt (the writer's choice, e.g. a random draw),
// as YCSB's random field contents.
//
// Immutable after Create; safe to share between threads.
#ifndef FARM_TOOLS_YCSB_RECORD_FORMAT_H_
#define FARM_TOOLS_YCSB_RECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace farm::ycsb {

class RecordFormat {
 public:
  static constexpr size_t kMaxKeyBytes = 250;         // memcached's limit
  static constexpr size_t kMinFixedKeyBytes = 12;     // "user" + 8 hex digits: 2^32 keys
  static constexpr size_t kVariableKeyMaxBytes = 24;  // "user" + 20 decimal digits
  static constexpr size_t kTagBytes = 16;  // record-number digits at the start of a value

  // key_size: 0 (variable) or kMinFixedKeyBytes..kMaxKeyBytes; value_size >= 1.
  // InvalidArgument otherwise.
  static absl::StatusOr<RecordFormat> Create(size_t key_size, size_t value_size);

  // The largest key (exactly key_size when it is fixed).
  size_t max_key_bytes() const { return key_size_ == 0 ? kVariableKeyMaxBytes : key_size_; }
  size_t key_size() const { return key_size_; }
  size_t value_bytes() const { return value_size_; }
  // Record numbers in [0, key_space()) have distinct keys.
  int64_t key_space() const { return key_space_; }

  // The key of record `keynum` (0 <= keynum < key_space()), written to the start of
  // `out`, which must hold max_key_bytes(). Returns a view of `out`.
  absl::string_view Key(int64_t keynum, absl::Span<char> out) const;
  // A value for record `keynum`, written to the start of `out`, which must hold
  // value_bytes(). Returns a view of `out`.
  absl::string_view Value(int64_t keynum, uint64_t salt, absl::Span<char> out) const;
  // True when `value` has value_bytes() bytes and starts with keynum's tag.
  bool ValueBelongsTo(int64_t keynum, absl::string_view value) const;

 private:
  RecordFormat(size_t key_size, size_t value_size);

  size_t key_size_;
  size_t value_size_;
  int mix_bits_;  // b; 64 for variable keys
  int64_t key_space_;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_RECORD_FORMAT_H_
