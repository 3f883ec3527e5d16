// Key operations, the same for every table layout: what an update asks for (KeyOp), what
// it answers (KeyOpResult), the limits on keys and values, and the semantics of a batch
// of operations on one key's value (ApplyOpsToValue), which each layout's transaction
// code (kv/table_ops.h, kv/linear/linear_ops.h) applies before writing the final state.
#ifndef FARM_KV_KEY_OPS_H_
#define FARM_KV_KEY_OPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm::kv {

enum class OpKind : uint8_t { kPut = 1, kRemove = 2, kIncrement = 3 };

struct KeyOp {
  OpKind kind = OpKind::kPut;
  std::string value;  // kPut
  int64_t delta = 0;  // kIncrement
};

struct KeyOpResult {
  absl::Status status;  // this operation's own error (e.g. INCR of a non-number)
  bool existed = false;
  int64_t number = 0;   // kIncrement: the new value
};

// Limits on keys and values. An update ships the pair in one message and its commit
// record carries the value object to the backups in one message, and a message may
// take at most a quarter of a 256 KiB ring (farm/msg): so key + value stay under
// 56 KiB, well below the largest object (1 MiB).
inline constexpr uint64_t kMaxKeyBytes = 8 * 1024;
inline constexpr uint64_t kMaxValueBytes = 48 * 1024;

// InvalidArgument naming the limit, for a key or value over it.
absl::Status CheckKeyLimit(absl::string_view key);
absl::Status CheckValueLimit(absl::string_view value);

// Applies `ops` in order to `value` (nullopt: the key is absent), as if one after
// another. Each op's own error (a value over the limit, INCR of a non-number or an
// overflow) is in its result and leaves the value as it was. Returns true when the
// value changed (a put, a remove of a present key, an increment); `ops` values are
// moved from.
bool ApplyOpsToValue(std::optional<std::string>& value, std::vector<KeyOp>& ops,
                     std::vector<KeyOpResult>& results);

// The op's own error, or its result.
inline absl::StatusOr<KeyOpResult> FlattenOpResult(absl::StatusOr<KeyOpResult> r) {
  if (r.ok() && !r->status.ok()) return r->status;
  return r;
}

// A decimal int64 as Redis accepts it (no spaces, no leading '+', no leading zeros).
std::optional<int64_t> ParseInt64(absl::string_view s);

}  // namespace farm::kv

#endif  // FARM_KV_KEY_OPS_H_
