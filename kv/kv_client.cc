#include "kv/kv_client.h"

#include <utility>

namespace farm::kv {

bool KeysWithinLimit(Context& ctx, absl::string_view key, GetDone& done) {
  absl::Status invalid = CheckKeyLimit(key);
  if (invalid.ok()) return true;
  ctx.Defer([invalid, done = std::move(done)]() mutable { done(invalid); });
  return false;
}

bool KeysWithinLimit(Context& ctx, absl::Span<const std::string> keys, MultiGetDone& done) {
  for (const std::string& key : keys) {
    absl::Status invalid = CheckKeyLimit(key);
    if (invalid.ok()) continue;
    ctx.Defer([invalid, done = std::move(done)]() mutable { done(invalid); });
    return false;
  }
  return true;
}

}  // namespace farm::kv
