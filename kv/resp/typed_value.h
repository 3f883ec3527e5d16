// The typed-value codec: how the RESP service keeps Redis types (strings, hashes) in a
// kv::Store, which stores byte strings only.
//
// Format (version 1 of the hash encoding; the tag byte names the type):
//
//   stored := plain                        any value whose first byte is not 0xFF
//                                          (empty included): a string, stored as is
//           | 0xFF 0xFF rest               the string 0xFF rest (escaped: the marker is
//                                          prepended, the string's own 0xFF is the tag)
//           | 0xFF 'H' hash                a hash
//   hash   := version(0x01) varint(count) pair{count}
//   pair   := varint(field size) field varint(value size) value
//
// varint: unsigned LEB128, at most 10 bytes. An ordinary string costs nothing: no copy,
// no prefix. Only a string that begins with 0xFF is stored one byte longer.
//
// Invariants (the encoder keeps them; the decoder checks 1-3 and never reads past the
// bytes it is given, answering DataLoss instead):
//   1. A hash has at least one field (HDEL of the last field deletes the key), and
//      count is the number of pairs.
//   2. Every size fits in the bytes that follow it; no bytes follow the last pair.
//   3. The version byte is kHashVersion; an unknown tag or version is DataLoss (a newer
//      format is never misread).
//   4. Fields are unique; pairs are in insertion order (a field updated in place keeps
//      its position; a deleted one is gone). Decoders do not check uniqueness: a lookup
//      takes the first match.
//
// Pure functions on byte strings; any thread. Views returned point into the argument.
#ifndef FARM_KV_RESP_TYPED_VALUE_H_
#define FARM_KV_RESP_TYPED_VALUE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace farm::kv::resp {

inline constexpr char kTypedMarker = '\xFF';
inline constexpr char kEscapedStringTag = '\xFF';
inline constexpr char kHashTag = 'H';
inline constexpr uint8_t kHashVersion = 1;

enum class ValueType : uint8_t { kString, kHash };

// A stored value seen through the codec. body: the string's bytes (kString), or the
// hash encoding after the tag, from the version byte on (kHash).
struct TypedView {
  ValueType type = ValueType::kString;
  absl::string_view body;
};

// DataLoss: 0xFF followed by nothing or by an unknown tag.
absl::StatusOr<TypedView> DecodeStored(absl::string_view stored);

// --- Strings ---

// A string must be escaped when it begins with the marker.
inline bool NeedsEscape(absl::string_view s) { return !s.empty() && s[0] == kTypedMarker; }
// Its size as stored.
inline size_t StoredStringSize(absl::string_view s) { return s.size() + (NeedsEscape(s) ? 1 : 0); }
// The stored form of a string for which NeedsEscape is true.
std::string EscapeString(absl::string_view s);

// --- Hashes ---

using HashPair = std::pair<absl::string_view, absl::string_view>;  // field, value

// The field count from the header (O(1)). DataLoss for a bad version or a count the
// body cannot hold.
absl::StatusOr<uint64_t> HashLength(absl::string_view body);
// Calls fn(field, value) for each pair in order until fn returns false. DataLoss when
// the encoding breaks invariants 1-3 (checked up to where the walk stopped).
absl::Status ForEachField(absl::string_view body,
                          absl::FunctionRef<bool(absl::string_view, absl::string_view)> fn);
// The value of `field`, or nullopt.
absl::StatusOr<std::optional<absl::string_view>> FindField(absl::string_view body,
                                                           absl::string_view field);
// Appends every pair to `pairs`.
absl::Status DecodeHash(absl::string_view body, std::vector<HashPair>* pairs);

// The stored form (marker and tag included) of a hash with `pairs`, which must be
// non-empty with unique fields; and its size, computed without building it.
size_t EncodedHashSize(absl::Span<const HashPair> pairs);
std::string EncodeHash(absl::Span<const HashPair> pairs);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_TYPED_VALUE_H_
