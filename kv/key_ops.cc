#include "kv/key_ops.h"

#include <charconv>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace farm::kv {

absl::Status CheckKeyLimit(absl::string_view key) {
  if (key.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a key of %d bytes is over the limit of %d bytes", key.size(), kMaxKeyBytes));
  }
  return absl::OkStatus();
}

absl::Status CheckValueLimit(absl::string_view value) {
  if (value.size() > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a value of %d bytes is over the limit of %d bytes", value.size(), kMaxValueBytes));
  }
  return absl::OkStatus();
}

bool ApplyOpsToValue(std::optional<std::string>& value, std::vector<KeyOp>& ops,
                     std::vector<KeyOpResult>& results) {
  bool changed = false;
  results.assign(ops.size(), KeyOpResult{});
  for (size_t i = 0; i < ops.size(); ++i) {
    KeyOp& op = ops[i];
    KeyOpResult& r = results[i];
    r.existed = value.has_value();
    switch (op.kind) {
      case OpKind::kPut:
        if (absl::Status s = CheckValueLimit(op.value); !s.ok()) {
          r.status = s;
          break;
        }
        value = std::move(op.value);
        changed = true;
        break;
      case OpKind::kRemove:
        changed |= value.has_value();
        value.reset();
        break;
      case OpKind::kIncrement: {
        std::optional<int64_t> current = value ? ParseInt64(*value) : std::optional<int64_t>(0);
        int64_t next;
        if (!current) {
          r.status = absl::InvalidArgumentError("value is not an integer or out of range");
        } else if (__builtin_add_overflow(*current, op.delta, &next)) {
          r.status = absl::InvalidArgumentError("increment or decrement would overflow");
        } else {
          value = absl::StrCat(next);
          r.number = next;
          changed = true;
        }
        break;
      }
    }
  }
  return changed;
}

std::optional<int64_t> ParseInt64(absl::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  // Redis's string2ll: no '+', no leading zero, and so no "-0".
  if (s[0] == '+' || (s.size() > 1 && s[0] == '0') || (s.size() > 1 && s[0] == '-' && s[1] == '0') ||
      s == "-") {
    return std::nullopt;
  }
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace farm::kv
