#include "kv/resp/store_replies.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/resp_names.h"

namespace farm::kv::resp {

std::string StoreErrorReply(const absl::Status& status) {
  const absl::string_view message = status.message();
  if (message.empty())
    return ErrorReply(absl::StrCat("ERR ", absl::StatusCodeToString(status.code())));
  return ErrorReply(absl::StrCat("ERR ", message));
}

std::string IncrementErrorReply(const absl::Status& status) {
  if (absl::IsOutOfRange(status) ||
      (absl::IsInvalidArgument(status) &&
       absl::StrContains(absl::AsciiStrToLower(status.message()), "overflow"))) {
    return ErrorReply("ERR increment or decrement would overflow");
  }
  if (absl::IsInvalidArgument(status)) return NotAnIntegerReply();
  return StoreErrorReply(status);
}

std::string NotAnIntegerReply() {
  return ErrorReply("ERR value is not an integer or out of range");
}

std::optional<std::string> CheckKeySize(absl::string_view key, const StoreLimits& limits) {
  if (limits.max_key_bytes == 0 || key.size() <= limits.max_key_bytes) return std::nullopt;
  return ErrorReply(absl::StrCat("ERR key is too large (", key.size(),
                                 " bytes; this store's limit is ", limits.max_key_bytes, ")"));
}

std::optional<std::string> CheckValueSize(absl::string_view value, const StoreLimits& limits) {
  if (limits.max_value_bytes == 0 || value.size() <= limits.max_value_bytes) return std::nullopt;
  return ErrorReply(absl::StrCat("ERR value is too large (", value.size(),
                                 " bytes; this store's limit is ", limits.max_value_bytes, ")"));
}

}  // namespace farm::kv::resp
