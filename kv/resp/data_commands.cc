#include "kv/resp/data_commands.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/async_steps.h"
#include "kv/resp/hash_commands.h"
#include "kv/resp/key_commands.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"
#include "kv/resp/string_commands.h"
#include "kv/resp/string_value.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {
namespace {

using CallPtr = std::shared_ptr<const Call>;

// True for the commands that may create a key; the others only read or remove keys,
// and answer for a key over the limit as for a missing one (OverKeyLimit).
bool MayCreateKeys(CommandId id) {
  switch (id) {
    case CommandId::kSet:
    case CommandId::kMSet:
    case CommandId::kIncr:
    case CommandId::kDecr:
    case CommandId::kIncrBy:
    case CommandId::kDecrBy:
      return true;
    default:
      return false;
  }
}

// The first key or value of `call` over the store's limits, as an error reply, for a
// command that may create keys.
std::optional<std::string> CheckSizes(const DataEnv& env, const Call& call) {
  if (!MayCreateKeys(call.spec->id)) return std::nullopt;
  std::optional<std::string> error;
  ForEachKey(*call.spec, call.args(), [&](const std::string& key) {
    if (!error) error = CheckKeySize(key, env.limits);
  });
  if (error) return error;
  const auto args = call.args();
  if (call.spec->id == CommandId::kSet) return CheckStringSize(args[2], env.limits);
  if (call.spec->id == CommandId::kMSet) {
    for (size_t i = 2; i < args.size(); i += 2) {
      if (auto e = CheckStringSize(args[i], env.limits)) return e;
    }
  }
  return std::nullopt;
}

// ops->MultiGet of `keys`, with each key over the store's limit answered as missing
// without asking the store. `keys` stays valid until done has run.
void MultiGetWithinLimit(const std::shared_ptr<KeyOps>& ops, absl::Span<const std::string> keys,
                         const StoreLimits& limits, Done<absl::StatusOr<std::vector<Value>>> done) {
  const auto over = [limits](const std::string& key) { return OverKeyLimit(key, limits); };
  const size_t oversize = std::count_if(keys.begin(), keys.end(), over);
  if (oversize == 0) return ops->MultiGet(keys, std::move(done));
  // Rare: copy the keys the store can hold, and put the answers back in their places.
  auto held = std::make_shared<std::vector<std::string>>();
  held->reserve(keys.size() - oversize);
  for (const std::string& key : keys) {
    if (!over(key)) held->push_back(key);
  }
  auto expand = [keys, over, held,
                 done = std::move(done)](absl::StatusOr<std::vector<Value>> found) mutable {
    if (!found.ok()) return done(found.status());
    std::vector<Value> values(keys.size());
    size_t next = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!over(keys[i])) values[i] = std::move((*found)[next++]);
    }
    done(std::move(values));
  };
  if (held->empty()) return expand(std::vector<Value>{});
  ops->MultiGet(*held, std::move(expand));
}

void RunGet(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const absl::string_view key = call->args()[1];
  if (OverKeyLimit(key, env.limits)) return done(NullBulkReply());
  ops->Get(key, [call, ops, done = std::move(done)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return done(StoreErrorReply(v.status()));
    absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*v);
    if (!s.ok()) return done(StoreErrorReply(s.status()));
    std::string reply;
    RespWriter w(&reply);
    if (s->has_value()) {
      w.Bulk(**s);
    } else {
      w.NullBulk();
    }
    done(std::move(reply));
  });
}

void RunType(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  if (OverKeyLimit(call->args()[1], env.limits)) return done(SimpleStringReply("none"));
  ops->Get(call->args()[1], [call, ops, done = std::move(done)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return done(StoreErrorReply(v.status()));
    if (!v->has_value()) return done(SimpleStringReply("none"));
    absl::StatusOr<TypedView> typed = DecodeStored(**v);
    if (!typed.ok()) return done(StoreErrorReply(typed.status()));
    done(SimpleStringReply(typed->type == ValueType::kHash ? "hash" : "string"));
  });
}

constexpr absl::string_view kExpiryUnsupported =
    "ERR syntax error: key expiry (EX, PX, EXAT, PXAT) is not supported";

bool IsExpiryOption(absl::string_view opt) {
  return absl::EqualsIgnoreCase(opt, "ex") || absl::EqualsIgnoreCase(opt, "px") ||
         absl::EqualsIgnoreCase(opt, "exat") || absl::EqualsIgnoreCase(opt, "pxat");
}

// TTL PTTL EXPIRETIME PEXPIRETIME PERSIST: no key expires here, so each answers from
// whether the key exists — -2 missing, -1 no expiry (PERSIST: 0, nothing removed).
void RunExpiryRead(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const bool persist = call->spec->id == CommandId::kPersist;
  const auto reply = [persist](bool exists) { return IntegerReply(persist ? 0 : exists ? -1 : -2); };
  if (OverKeyLimit(call->args()[1], env.limits)) return done(reply(false));
  ops->Get(call->args()[1], [call, ops, reply, done = std::move(done)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return done(StoreErrorReply(v.status()));
    done(reply(v->has_value()));
  });
}

// GETEX key [PERSIST]: GET, as no key has a time to live; the options that would set one
// are refused.
void RunGetEx(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const auto args = call->args();
  for (size_t i = 2; i < args.size(); ++i) {
    if (absl::EqualsIgnoreCase(args[i], "persist")) continue;
    return done(ErrorReply(IsExpiryOption(args[i]) ? kExpiryUnsupported : "ERR syntax error"));
  }
  RunGet(env, std::move(call), ops, std::move(done));
}

void RunSet(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const auto args = call->args();
  bool nx = false, xx = false, get = false;
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string& opt = args[i];
    if (absl::EqualsIgnoreCase(opt, "nx") && !xx) {
      nx = true;
    } else if (absl::EqualsIgnoreCase(opt, "xx") && !nx) {
      xx = true;
    } else if (absl::EqualsIgnoreCase(opt, "get")) {
      get = true;
    } else if (absl::EqualsIgnoreCase(opt, "keepttl")) {
      // No key has a time to live here: keeping it is what SET does anyway.
    } else if (IsExpiryOption(opt)) {
      return done(ErrorReply(kExpiryUnsupported));
    } else {
      return done(ErrorReply("ERR syntax error"));
    }
  }
  if (!nx && !xx && !get) {
    std::shared_ptr<std::string> escaped;
    const absl::string_view stored = StoredString(args[2], &escaped);
    PutOnKey(env, ops, args[1], stored,
             [call, ops, escaped, done = std::move(done)](absl::Status s) mutable {
               done(s.ok() ? SimpleStringReply("OK") : StoreErrorReply(s));
             });
    return;
  }
  CommandBody body = [call, nx, xx, get](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    const absl::string_view key = call->args()[1];
    o->Get(key, [call, o, nx, xx, get, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      const bool exists = old->has_value();
      std::string reply;
      RespWriter w(&reply);
      if (get) {  // Redis: GET of another type is an error, and nothing is set
        absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*old);
        if (!s.ok()) return d(s.status());
        if (s->has_value()) {
          w.Bulk(**s);
        } else {
          w.NullBulk();
        }
      }
      if ((nx && exists) || (xx && !exists)) {
        if (!get) w.NullBulk();
        return d(std::move(reply));
      }
      if (!get) w.SimpleString("OK");
      const auto args = call->args();
      std::shared_ptr<std::string> escaped;
      const absl::string_view stored = StoredString(args[2], &escaped);
      o->Put(
          args[1], stored,
          [call, o, escaped, reply = std::move(reply), d = std::move(d)](absl::Status s) mutable {
            if (!s.ok()) return d(s);
            d(std::move(reply));
          });
    });
  };
  RunAtomicallyOnKey(env, ops, args[1], std::move(body), std::move(done));
}

void RunDel(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const size_t keys = call->args().size() - 1;
  const StoreLimits limits = env.limits;
  CommandBody body = [call, limits](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    struct State {
      int64_t removed = 0;
      absl::Status status;
      Done<CommandResult> done;
    };
    auto state = std::make_shared<State>();
    state->done = std::move(d);
    const size_t n = call->args().size() - 1;
    RunSequentially(
        n,
        [call, o, limits, state](size_t i, absl::AnyInvocable<void()> next) {
          // A key over the limit cannot exist: nothing to remove.
          if (!state->status.ok() || OverKeyLimit(call->args()[i + 1], limits)) return next();
          o->Remove(call->args()[i + 1],
                    [call, o, state, next = std::move(next)](absl::StatusOr<bool> r) mutable {
                      if (!r.ok()) {
                        state->status = r.status();
                      } else if (*r) {
                        ++state->removed;
                      }
                      next();
                    });
        },
        [state] {
          if (!state->status.ok()) return state->done(state->status);
          state->done(IntegerReply(state->removed));
        });
  };
  RunAtomically(env, ops, /*needs_txn=*/keys > 1, std::move(body), std::move(done));
}

void RunMSet(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const size_t pairs = (call->args().size() - 1) / 2;
  CommandBody body = [call](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    PutPairs(call, std::move(o), SimpleStringReply("OK"), std::move(d));
  };
  RunAtomically(env, ops, /*needs_txn=*/pairs > 1, std::move(body), std::move(done));
}

// EXISTS (count == true) and MGET (nil for a key of another type, as Redis).
void RunMultiGet(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, bool count,
                 ReplyDone done) {
  const auto keys = call->args().subspan(1);
  // The callback holds `call`, which owns `keys`.
  auto answer = [call, ops, count,
                 done = std::move(done)](absl::StatusOr<std::vector<Value>> values) mutable {
    if (!values.ok()) return done(StoreErrorReply(values.status()));
    std::string reply;
    RespWriter w(&reply);
    if (count) {
      int64_t present = 0;
      for (const Value& v : *values) present += v.has_value() ? 1 : 0;
      w.Integer(present);
    } else {
      w.ArrayHeader(values->size());
      for (const Value& v : *values) {
        absl::StatusOr<std::optional<absl::string_view>> s = StringOf(v);
        if (s.ok() && s->has_value()) {
          w.Bulk(**s);
        } else {
          w.NullBulk();
        }
      }
    }
    done(std::move(reply));
  };
  MultiGetWithinLimit(ops, keys, env.limits, std::move(answer));
}

// After Increment found a value that is not an integer: WRONGTYPE when the key holds
// another type, else Redis's not-an-integer error. (A rare path: one more read.)
void ReplyNotAnInteger(CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  ops->Get(call->args()[1], [call, ops, done = std::move(done)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return done(StoreErrorReply(v.status()));
    absl::StatusOr<std::optional<absl::string_view>> s = StringOf(*v);
    done(s.ok() ? NotAnIntegerReply() : StoreErrorReply(s.status()));
  });
}

void RunIncrement(CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const auto args = call->args();
  int64_t delta = 1;
  switch (call->spec->id) {
    case CommandId::kDecr:
      delta = -1;
      break;
    case CommandId::kIncrBy:
      if (!ParseStrictInt64(args[2], &delta)) return done(NotAnIntegerReply());
      break;
    case CommandId::kDecrBy:
      if (!ParseStrictInt64(args[2], &delta)) return done(NotAnIntegerReply());
      if (delta == INT64_MIN) return done(ErrorReply("ERR decrement would overflow"));
      delta = -delta;
      break;
    default:
      break;
  }
  ops->Increment(args[1], delta,
                 [call, ops, done = std::move(done)](absl::StatusOr<int64_t> v) mutable {
                   if (v.ok()) return done(IntegerReply(*v));
                   if (IsNotAnInteger(v.status())) {
                     return ReplyNotAnInteger(std::move(call), ops, std::move(done));
                   }
                   done(IncrementErrorReply(v.status()));
                 });
}

}  // namespace

bool IsDataCommand(CommandId id) {
  switch (id) {
    case CommandId::kGet:
    case CommandId::kSet:
    case CommandId::kDel:
    case CommandId::kExists:
    case CommandId::kMGet:
    case CommandId::kMSet:
    case CommandId::kIncr:
    case CommandId::kDecr:
    case CommandId::kIncrBy:
    case CommandId::kDecrBy:
    case CommandId::kType:
    case CommandId::kTtl:
    case CommandId::kPTtl:
    case CommandId::kExpireTime:
    case CommandId::kPExpireTime:
    case CommandId::kPersist:
    case CommandId::kGetEx:
      return true;
    default:
      return IsHashCommand(id) || IsStringCommand(id) || IsKeyCommand(id);
  }
}

bool WritesThroughCombiner(CommandId id) {
  switch (id) {
    case CommandId::kSet:
    case CommandId::kSetNx:
    case CommandId::kGetSet:
    case CommandId::kGetDel:
    case CommandId::kAppend:
    case CommandId::kHSet:
    case CommandId::kHMSet:
    case CommandId::kHSetNx:
    case CommandId::kHDel:
    case CommandId::kHIncrBy:
    case CommandId::kHIncrByFloat:
    case CommandId::kSetRange:
    case CommandId::kIncrByFloat:
      return true;
    default:
      return false;
  }
}

void RunDataCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                    std::shared_ptr<KeyOps> ops, ReplyDone done) {
  const CommandId id = call->spec->id;
  if (IsHashCommand(id)) {
    return RunHashCommand(env, std::move(call), std::move(ops), std::move(done));
  }
  if (IsStringCommand(id)) {
    return RunStringCommand(env, std::move(call), std::move(ops), std::move(done));
  }
  if (IsKeyCommand(id)) return RunKeyCommand(env, std::move(call), std::move(ops), std::move(done));
  if (id == CommandId::kMSet && call->args().size() % 2 == 0) {
    return done(ErrorReply(ArityMessage("mset")));
  }
  if (auto error = CheckSizes(env, *call)) return done(std::move(*error));
  switch (id) {
    case CommandId::kGet:
      return RunGet(env, std::move(call), ops, std::move(done));
    case CommandId::kType:
      return RunType(env, std::move(call), ops, std::move(done));
    case CommandId::kTtl:
    case CommandId::kPTtl:
    case CommandId::kExpireTime:
    case CommandId::kPExpireTime:
    case CommandId::kPersist:
      return RunExpiryRead(env, std::move(call), ops, std::move(done));
    case CommandId::kGetEx:
      return RunGetEx(env, std::move(call), ops, std::move(done));
    case CommandId::kSet:
      return RunSet(env, std::move(call), ops, std::move(done));
    case CommandId::kDel:
      return RunDel(env, std::move(call), ops, std::move(done));
    case CommandId::kExists:
      return RunMultiGet(env, std::move(call), ops, /*count=*/true, std::move(done));
    case CommandId::kMGet:
      return RunMultiGet(env, std::move(call), ops, /*count=*/false, std::move(done));
    case CommandId::kMSet:
      return RunMSet(env, std::move(call), ops, std::move(done));
    case CommandId::kIncr:
    case CommandId::kDecr:
    case CommandId::kIncrBy:
    case CommandId::kDecrBy:
      return RunIncrement(std::move(call), ops, std::move(done));
    default:
      return done(ErrorReply(absl::StrCat("ERR '", call->spec->name, "' is not a data command")));
  }
}

}  // namespace farm::kv::resp
