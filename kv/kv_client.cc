#include "kv/kv_client.h"

#include <memory>
#include <utility>
#include <vector>

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

bool UpdateWithinLimits(Context& ctx, absl::string_view key, absl::string_view value,
                        Done<absl::StatusOr<KeyOpResult>>& done) {
  absl::Status invalid = CheckKeyLimit(key);
  if (invalid.ok()) invalid = CheckValueLimit(value);
  if (invalid.ok()) return true;
  ctx.Defer([invalid, done = std::move(done)]() mutable { done(invalid); });
  return false;
}

void MultiGetByGets(Context& ctx, absl::Span<const std::string> keys,
                    absl::FunctionRef<void(const std::string& key, GetDone done)> get, MultiGetDone done) {
  struct Gather {
    std::vector<std::optional<std::string>> values;
    absl::Status error;
    size_t pending = 0;
    MultiGetDone done;
  };
  auto gather = std::make_shared<Gather>();
  gather->values.resize(keys.size());
  gather->pending = keys.size();
  gather->done = std::move(done);
  if (keys.empty()) {
    ctx.Defer([gather] { gather->done(std::move(gather->values)); });
    return;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    get(keys[i], [gather, i](absl::StatusOr<std::optional<absl::string_view>> r) {
      if (!r.ok()) {
        if (gather->error.ok()) gather->error = r.status();
      } else if (r->has_value()) {
        gather->values[i] = std::string(**r);
      }
      if (--gather->pending > 0) return;
      if (!gather->error.ok()) return gather->done(gather->error);
      gather->done(std::move(gather->values));
    });
  }
}

void KvClient::ScanKeys(uint64_t, uint32_t, Done<absl::StatusOr<KeyPage>> done) {
  ctx().Defer([done = std::move(done)]() mutable {
    done(absl::UnimplementedError("this table layout does not enumerate its keys (the hopscotch and linear layouts do)"));
  });
}

}  // namespace farm::kv
