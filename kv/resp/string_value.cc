#include "kv/resp/string_value.h"

#include "kv/resp/store_replies.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {

absl::StatusOr<std::optional<absl::string_view>> StringOf(const Value& v) {
  if (!v.has_value()) return std::nullopt;
  absl::StatusOr<TypedView> typed = DecodeStored(*v);
  if (!typed.ok()) return typed.status();
  if (typed->type != ValueType::kString) return WrongTypeError();
  return typed->body;
}

absl::string_view StoredString(absl::string_view s, std::shared_ptr<std::string>* holder) {
  if (!NeedsEscape(s)) return s;
  *holder = std::make_shared<std::string>(EscapeString(s));
  return **holder;
}

std::optional<std::string> CheckStringSize(absl::string_view s, const StoreLimits& limits) {
  if (!NeedsEscape(s)) return CheckValueSize(s, limits);
  absl::Status status = CheckStoredSize(StoredStringSize(s), limits);
  if (status.ok()) return std::nullopt;
  return StoreErrorReply(status);
}

}  // namespace farm::kv::resp
