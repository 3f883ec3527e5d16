#include "kv/resp/string_commands.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kv/resp/async_steps.h"
#include "kv/resp/float_value.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"
#include "kv/resp/string_value.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {
namespace {

using CallPtr = std::shared_ptr<const Call>;

// Redis's default proto-max-bulk-len: the longest string SETRANGE makes there.
constexpr uint64_t kRedisMaxStringBytes = uint64_t{512} << 20;

std::string BulkOrNullReply(std::optional<absl::string_view> s) {
  if (!s.has_value()) return NullBulkReply();
  std::string out;
  RespWriter(&out).Bulk(*s);
  return out;
}

// SETNX key value: 1 when the key was missing and is now set, else 0.
CommandBody SetNx(CallPtr call) {
  return [call](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    o->Get(call->args()[1], [call, o, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      if (old->has_value()) return d(IntegerReply(0));
      std::shared_ptr<std::string> escaped;
      const absl::string_view stored = StoredString(call->args()[2], &escaped);
      o->Put(call->args()[1], stored, [call, o, escaped, d = std::move(d)](absl::Status s) mutable {
        if (!s.ok()) return d(s);
        d(IntegerReply(1));
      });
    });
  };
}

// GETSET key value: the old string (or nil), and the key set to value.
CommandBody GetSet(CallPtr call) {
  return [call](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    o->Get(call->args()[1], [call, o, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*old);
      if (!s.ok()) return d(s.status());
      std::string reply = BulkOrNullReply(*s);
      std::shared_ptr<std::string> escaped;
      const absl::string_view stored = StoredString(call->args()[2], &escaped);
      o->Put(
          call->args()[1], stored,
          [call, o, escaped, reply = std::move(reply), d = std::move(d)](absl::Status s) mutable {
            if (!s.ok()) return d(s);
            d(std::move(reply));
          });
    });
  };
}

// GETDEL key: the string (or nil), and the key removed.
CommandBody GetDel(CallPtr call) {
  return [call](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    o->Get(call->args()[1], [call, o, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*old);
      if (!s.ok()) return d(s.status());
      if (!s->has_value()) return d(NullBulkReply());
      std::string reply = BulkOrNullReply(*s);
      o->Remove(call->args()[1], [call, o, reply = std::move(reply),
                                  d = std::move(d)](absl::StatusOr<bool> r) mutable {
        if (!r.ok()) return d(r.status());
        d(std::move(reply));
      });
    });
  };
}

// APPEND key value: the string's new length; a missing key is the empty string.
CommandBody Append(CallPtr call, const StoreLimits& limits) {
  return [call, limits](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    o->Get(call->args()[1], [call, o, limits, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*old);
      if (!s.ok()) return d(s.status());
      auto value = std::make_shared<std::string>(s->value_or(""));
      value->append(call->args()[2]);
      if (absl::Status size = CheckStoredSize(StoredStringSize(*value), limits); !size.ok())
        return d(size);
      const int64_t length = static_cast<int64_t>(value->size());
      if (NeedsEscape(*value)) *value = EscapeString(*value);
      o->Put(call->args()[1], *value,
             [call, o, value, length, d = std::move(d)](absl::Status s) mutable {
               if (!s.ok()) return d(s);
               d(IntegerReply(length));
             });
    });
  };
}

// MSETNX key value [key value ...]: 1 when no key existed and all are now set, else 0
// and nothing is set.
CommandBody MSetNx(CallPtr call) {
  return [call](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    auto keys = std::make_shared<std::vector<std::string>>();
    const auto args = call->args();
    for (size_t i = 1; i < args.size(); i += 2) keys->push_back(args[i]);
    o->MultiGet(
        *keys, [call, o, keys, d = std::move(d)](absl::StatusOr<std::vector<Value>> found) mutable {
          if (!found.ok()) return d(found.status());
          for (const Value& v : *found) {
            if (v.has_value()) return d(IntegerReply(0));
          }
          PutPairs(call, o, IntegerReply(1), std::move(d));
        });
  };
}

// SETRANGE key offset value: the string's new length; the string is padded with zero
// bytes up to offset. An empty value changes nothing (and creates no key).
CommandBody SetRange(CallPtr call, int64_t offset, const StoreLimits& limits) {
  return [call, offset, limits](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    o->Get(call->args()[1], [call, o, offset, limits, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*old);
      if (!s.ok()) return d(s.status());
      const absl::string_view patch = call->args()[3];
      const size_t length = s->has_value() ? (*s)->size() : 0;
      if (patch.empty()) return d(IntegerReply(static_cast<int64_t>(length)));
      const uint64_t end = static_cast<uint64_t>(offset) + patch.size();
      if (end > kRedisMaxStringBytes) {
        return d(RedisError("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
      }
      // At least this long as stored: refused before the bytes are made.
      if (absl::Status size = CheckStoredSize(std::max<uint64_t>(length, end), limits); !size.ok()) return d(size);
      auto value = std::make_shared<std::string>(s->value_or(""));
      if (value->size() < end) value->resize(end, '\0');
      std::copy(patch.begin(), patch.end(), value->begin() + offset);
      if (absl::Status size = CheckStoredSize(StoredStringSize(*value), limits); !size.ok()) return d(size);
      const int64_t new_length = static_cast<int64_t>(value->size());
      if (NeedsEscape(*value)) *value = EscapeString(*value);
      o->Put(call->args()[1], *value, [call, o, value, new_length, d = std::move(d)](absl::Status s) mutable {
        if (!s.ok()) return d(s);
        d(IntegerReply(new_length));
      });
    });
  };
}

// INCRBYFLOAT key increment: the new value, as Redis formats it, stored as a string; a
// missing key is 0. Redis's order: the key's type, its value, the increment.
CommandBody IncrByFloat(CallPtr call, const StoreLimits& limits) {
  return [call, limits](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    o->Get(call->args()[1], [call, o, limits, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*old);
      if (!s.ok()) return d(s.status());
      std::optional<long double> value = s->has_value() ? ParseRedisLongDouble(**s) : 0.0L;
      if (!value.has_value()) return d(RedisError("ERR value is not a valid float"));
      const std::optional<long double> increment = ParseRedisLongDouble(call->args()[2]);
      if (!increment.has_value()) return d(RedisError("ERR value is not a valid float"));
      const long double sum = *value + *increment;
      if (std::isnan(sum) || std::isinf(sum)) return d(RedisError("ERR increment would produce NaN or Infinity"));
      auto formatted = std::make_shared<std::string>(FormatRedisLongDouble(sum));
      if (absl::Status size = CheckStoredSize(formatted->size(), limits); !size.ok()) return d(size);
      o->Put(call->args()[1], *formatted, [call, o, formatted, d = std::move(d)](absl::Status s) mutable {
        if (!s.ok()) return d(s);
        d(BulkOrNullReply(*formatted));
      });
    });
  };
}

// GETRANGE key start end (and SUBSTR): the bytes from start to end, both included,
// negative from the end, clamped to the string; "" for a missing key.
std::string RangeReply(absl::string_view str, int64_t start, int64_t end) {
  const int64_t length = static_cast<int64_t>(str.size());
  if (start < 0 && end < 0 && start > end) return BulkOrNullReply("");
  if (start < 0) start += length;
  if (end < 0) end += length;
  start = std::max<int64_t>(start, 0);
  end = std::max<int64_t>(end, 0);
  if (end >= length) end = length - 1;
  if (start > end || length == 0) return BulkOrNullReply("");
  return BulkOrNullReply(str.substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
}

void RunGetRange(CallPtr call, int64_t start, int64_t end, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  ops->Get(call->args()[1], [call, ops, start, end, done = std::move(done)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return done(StoreErrorReply(v.status()));
    absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*v);
    if (!s.ok()) return done(StoreErrorReply(s.status()));
    done(RangeReply(s->value_or(""), start, end));
  });
}

void RunStrLen(CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  ops->Get(call->args()[1], [call, ops, done = std::move(done)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return done(StoreErrorReply(v.status()));
    absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*v);
    if (!s.ok()) return done(StoreErrorReply(s.status()));
    done(IntegerReply(s->has_value() ? static_cast<int64_t>((*s)->size()) : 0));
  });
}

// The first key or value over the store's limits, as an error reply, for the commands
// that may create a key; the others answer for a key over the limit as for a missing one.
std::optional<std::string> CheckSizes(const DataEnv& env, const Call& call) {
  const auto args = call.args();
  switch (call.spec->id) {
    case CommandId::kSetNx:
    case CommandId::kGetSet:
      if (auto e = CheckKeySize(args[1], env.limits)) return e;
      return CheckStringSize(args[2], env.limits);
    case CommandId::kAppend:  // the result's size is checked once the old value is read
    case CommandId::kIncrByFloat:
      return CheckKeySize(args[1], env.limits);
    case CommandId::kSetRange:  // an empty value creates nothing
      if (args[3].empty()) return std::nullopt;
      return CheckKeySize(args[1], env.limits);
    case CommandId::kMSetNx:
      for (size_t i = 1; i + 1 < args.size(); i += 2) {
        if (auto e = CheckKeySize(args[i], env.limits)) return e;
        if (auto e = CheckStringSize(args[i + 1], env.limits)) return e;
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

bool IsStringCommand(CommandId id) {
  switch (id) {
    case CommandId::kSetNx:
    case CommandId::kGetSet:
    case CommandId::kGetDel:
    case CommandId::kAppend:
    case CommandId::kStrLen:
    case CommandId::kMSetNx:
    case CommandId::kGetRange:
    case CommandId::kSubStr:
    case CommandId::kSetRange:
    case CommandId::kIncrByFloat:
      return true;
    default:
      return false;
  }
}

void RunStringCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                      std::shared_ptr<KeyOps> ops, ReplyDone done) {
  const CommandId id = call->spec->id;
  if (id == CommandId::kMSetNx && call->args().size() % 2 == 0) {
    return done(ErrorReply(ArityMessage("msetnx")));
  }
  const auto args = call->args();
  // Redis's order: the integer arguments, then the key.
  int64_t first = 0, second = 0;
  if (id == CommandId::kGetRange || id == CommandId::kSubStr) {
    if (!ParseStrictInt64(args[2], &first) || !ParseStrictInt64(args[3], &second)) {
      return done(NotAnIntegerReply());
    }
  }
  if (id == CommandId::kSetRange) {
    if (!ParseStrictInt64(args[2], &first)) return done(NotAnIntegerReply());
    if (first < 0) return done(ErrorReply("ERR offset is out of range"));
  }
  if (auto error = CheckSizes(env, *call)) return done(std::move(*error));
  const absl::string_view key = args[1];
  switch (id) {
    case CommandId::kSetNx:
      return RunAtomicallyOnKey(env, ops, key, SetNx(call), std::move(done));
    case CommandId::kGetSet:
      return RunAtomicallyOnKey(env, ops, key, GetSet(call), std::move(done));
    case CommandId::kGetDel:
      if (OverKeyLimit(key, env.limits)) return done(NullBulkReply());
      return RunAtomicallyOnKey(env, ops, key, GetDel(call), std::move(done));
    case CommandId::kAppend:
      return RunAtomicallyOnKey(env, ops, key, Append(call, env.limits), std::move(done));
    case CommandId::kStrLen:
      if (OverKeyLimit(key, env.limits)) return done(IntegerReply(0));
      return RunStrLen(std::move(call), ops, std::move(done));
    case CommandId::kMSetNx:
      return RunAtomically(env, ops, /*needs_txn=*/true, MSetNx(call), std::move(done));
    case CommandId::kGetRange:
    case CommandId::kSubStr:
      if (OverKeyLimit(key, env.limits)) return done(BulkOrNullReply(""));
      return RunGetRange(std::move(call), first, second, ops, std::move(done));
    case CommandId::kSetRange:
      if (OverKeyLimit(key, env.limits)) return done(IntegerReply(0));  // only with an empty value
      return RunAtomicallyOnKey(env, ops, key, SetRange(call, first, env.limits), std::move(done));
    case CommandId::kIncrByFloat:
      return RunAtomicallyOnKey(env, ops, key, IncrByFloat(call, env.limits), std::move(done));
    default:
      return done(ErrorReply("ERR not a string command"));
  }
}

}  // namespace farm::kv::resp
