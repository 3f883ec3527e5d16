#include "kv/resp/string_commands.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kv/resp/async_steps.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"
#include "kv/resp/string_value.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {
namespace {

using CallPtr = std::shared_ptr<const Call>;

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
  if (auto error = CheckSizes(env, *call)) return done(std::move(*error));
  const absl::string_view key = call->args()[1];
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
    default:
      return done(ErrorReply("ERR not a string command"));
  }
}

}  // namespace farm::kv::resp
