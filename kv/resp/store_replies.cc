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

// The length of an address at `at` — r<region>+0x<offset>, then a pointer's [<size>]
// and #<incarnation> (farm/base/address.h) — or 0.
size_t AddressAt(absl::string_view s, size_t at) {
  if (s.substr(at, 1) != "r") return 0;
  const size_t region = Digits(s, at + 1, false);
  if (region == 0 || s.substr(at + 1 + region, 3) != "+0x") return 0;
  const size_t offset = Digits(s, at + 4 + region, true);
  if (offset == 0) return 0;
  size_t end = at + 4 + region + offset;
  if (s.substr(end, 1) == "[") {
    const size_t size = Digits(s, end + 1, false);
    if (size > 0 && s.substr(end + 1 + size, 1) == "]") end += size + 2;
  }
  if (s.substr(end, 1) == "#") {
    const size_t incarnation = Digits(s, end + 1, false);
    if (incarnation > 0) end += incarnation + 1;
  }
  return end - at;
}

// The length of `word` (case-insensitive) at `at`, then a space or '=', then an id —
// decimal, or hex when `hex` — possibly a list of them joined by ',' — or 0. A hex id is
// a transaction's, 12 digits or more (the node id is in its top bits): "transaction 3
// times" names none.
size_t NamedIdAt(absl::string_view s, size_t at, absl::string_view word, bool hex) {
  if (s.size() < at + word.size() + 2 || !absl::EqualsIgnoreCase(s.substr(at, word.size()), word)) return 0;
  size_t end = at + word.size();
  if (s[end] != ' ' && s[end] != '=') return 0;
  ++end;
  size_t id = Digits(s, end, hex);
  if (id == 0 || (hex && id < 12)) return 0;
  end += id;
  while (s.substr(end, 1) == "," && (id = Digits(s, end + 1, hex)) > 0) end += id + 1;
  // The id ends the word: "transaction failed" names no transaction.
  if (end < s.size() && absl::ascii_isalnum(s[end])) return 0;
  return end - at;
}

}  // namespace

std::string WithoutInternalAddresses(absl::string_view message) {
  // What identifies the store's internals means nothing to a client: addresses and
  // pointers, raw or not (farm/base/address.h), region, node and transaction ids.
  struct Named {
    absl::string_view word;
    bool hex;
    absl::string_view replacement;
  };
  static constexpr Named kNamed[] = {
      {"regions", false, "regions"},         {"region", false, "a region"},
      {"nodes", false, "nodes"},             {"node", false, "a node"},
      {"backup(s)", false, "backups"},       {"backups", false, "backups"},
      {"backup", false, "a backup"},         {"transaction", true, "a transaction"},
  };
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size();) {
    const bool word_start = i == 0 || !absl::ascii_isalnum(message[i - 1]);
    if (!word_start) {
      out += message[i++];
      continue;
    }
    if (message.substr(i, 4) == "raw:") {
      if (const size_t n = AddressAt(message, i + 4); n > 0) {
        out += "an object";
        i += 4 + n;
        continue;
      }
    }
    if (const size_t n = AddressAt(message, i); n > 0) {
      out += "an object";
      i += n;
      continue;
    }
    bool replaced = false;
    for (const Named& named : kNamed) {
      if (const size_t n = NamedIdAt(message, i, named.word, named.hex); n > 0) {
        absl::StrAppend(&out, named.replacement);
        i += n;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += message[i++];
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

bool OverKeyLimit(absl::string_view key, const StoreLimits& limits) {
  return limits.max_key_bytes != 0 && key.size() > limits.max_key_bytes;
}

std::optional<std::string> CheckKeySize(absl::string_view key, const StoreLimits& limits) {
  if (!OverKeyLimit(key, limits)) return std::nullopt;
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
