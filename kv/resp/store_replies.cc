#include "kv/resp/store_replies.h"

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/resp_names.h"

namespace farm::kv::resp {

namespace {

constexpr absl::string_view kRedisErrorPayload = "farm.kv.resp/redis-error";

size_t Digits(absl::string_view s, size_t at, bool hex) {
  size_t n = 0;
  while (at + n < s.size() && (hex ? absl::ascii_isxdigit(s[at + n]) : absl::ascii_isdigit(s[at + n]))) ++n;
  return n;
}

}  // namespace

std::string WithoutInternalAddresses(absl::string_view message) {
  // Addresses print as r<region>+0x<offset> (farm/base/address.h), regions as
  // "region <id>": neither means anything to a client.
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size();) {
    const bool word_start = i == 0 || !absl::ascii_isalnum(message[i - 1]);
    if (word_start && message[i] == 'r') {
      const size_t region = Digits(message, i + 1, false);
      if (region > 0 && message.substr(i + 1 + region, 3) == "+0x") {
        const size_t offset = Digits(message, i + 4 + region, true);
        if (offset > 0) {
          out += "an object";
          i += 4 + region + offset;
          continue;
        }
      }
    }
    if (word_start && message.substr(i, 7) == "region ") {
      const size_t id = Digits(message, i + 7, false);
      if (id > 0) {
        out += "a region";
        i += 7 + id;
        continue;
      }
    }
    out += message[i++];
  }
  return out;
}

absl::Status RedisError(absl::string_view line) {
  absl::Status s = absl::FailedPreconditionError(line);
  s.SetPayload(kRedisErrorPayload, absl::Cord());
  return s;
}

bool IsRedisError(const absl::Status& status) {
  return status.GetPayload(kRedisErrorPayload).has_value();
}

absl::Status WrongTypeError() {
  return RedisError("WRONGTYPE Operation against a key holding the wrong kind of value");
}

std::string StoreErrorReply(const absl::Status& status) {
  const absl::string_view message = status.message();
  if (IsRedisError(status)) return ErrorReply(message);
  if (message.empty())
    return ErrorReply(absl::StrCat("ERR ", absl::StatusCodeToString(status.code())));
  return ErrorReply(absl::StrCat("ERR ", WithoutInternalAddresses(message)));
}

namespace {

bool IsOverflow(const absl::Status& status) {
  return absl::IsOutOfRange(status) ||
         (absl::IsInvalidArgument(status) &&
          absl::StrContains(absl::AsciiStrToLower(status.message()), "overflow"));
}

}  // namespace

bool IsNotAnInteger(const absl::Status& status) {
  return absl::IsInvalidArgument(status) && !IsOverflow(status);
}

std::string IncrementErrorReply(const absl::Status& status) {
  if (IsOverflow(status)) return ErrorReply("ERR increment or decrement would overflow");
  if (IsNotAnInteger(status)) return NotAnIntegerReply();
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

absl::Status CheckStoredSize(size_t stored_bytes, const StoreLimits& limits) {
  if (limits.max_value_bytes == 0 || stored_bytes <= limits.max_value_bytes) {
    return absl::OkStatus();
  }
  return RedisError(absl::StrCat("ERR value is too large (", stored_bytes,
                                 " bytes as stored; this store's limit is ", limits.max_value_bytes,
                                 ")"));
}

}  // namespace farm::kv::resp
