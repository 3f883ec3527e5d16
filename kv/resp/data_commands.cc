#include "kv/resp/data_commands.h"

#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/async_steps.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {
namespace {

using CallPtr = std::shared_ptr<const Call>;
using Result = absl::StatusOr<std::string>;
// Operations on `ops` ending in done(reply) or done(store error).
using Body = std::function<void(std::shared_ptr<KeyOps> ops, Done<Result> done)>;

std::string Encode(absl::AnyInvocable<void(RespWriter&)> write) {
  std::string out;
  RespWriter w(&out);
  write(w);
  return out;
}

std::string IntegerReply(int64_t v) {
  return Encode([v](RespWriter& w) { w.Integer(v); });
}

// Runs `body` so that its operations are atomic together: on `ops` when that is a
// transaction already or when the body does a single operation (needs_txn false), else
// in a transaction of its own, retried on conflicts.
void RunAtomically(const DataEnv& env, const std::shared_ptr<KeyOps>& ops, bool needs_txn,
                   Body body, ReplyDone done) {
  auto finish = [done = std::move(done)](Result r) mutable {
    done(r.ok() ? std::move(*r) : StoreErrorReply(r.status()));
  };
  if (ops->transactional() || !needs_txn) {
    body(ops, std::move(finish));
    return;
  }
  const int attempts = env.max_txn_attempts;
  RunInTxn(
      env.store, nullptr, attempts,
      [body = std::move(body)](std::shared_ptr<TxnOps> txn, Done<Result> d) {
        body(std::move(txn), std::move(d));
      },
      [finish = std::move(finish), attempts](Result r) mutable {
        if (absl::IsAborted(r.status())) {
          r = absl::AbortedError(absl::StrCat("the store aborted this command's transaction ",
                                              attempts, " times (conflicts); nothing was written"));
        }
        finish(std::move(r));
      });
}

// The first key or value of `call` over the store's limits, as an error reply.
std::optional<std::string> CheckSizes(const DataEnv& env, const Call& call) {
  std::optional<std::string> error;
  ForEachKey(*call.spec, call.args(), [&](const std::string& key) {
    if (!error) error = CheckKeySize(key, env.limits);
  });
  if (error) return error;
  const auto args = call.args();
  if (call.spec->id == CommandId::kSet) return CheckValueSize(args[2], env.limits);
  if (call.spec->id == CommandId::kMSet) {
    for (size_t i = 2; i < args.size(); i += 2) {
      if (auto e = CheckValueSize(args[i], env.limits)) return e;
    }
  }
  return std::nullopt;
}

void RunGet(CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const absl::string_view key = call->args()[1];
  ops->Get(key, [call, ops, done = std::move(done)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return done(StoreErrorReply(v.status()));
    done(Encode([&](RespWriter& w) { w.OptionalBulk(*v); }));
  });
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
    } else if (absl::EqualsIgnoreCase(opt, "ex") || absl::EqualsIgnoreCase(opt, "px") ||
               absl::EqualsIgnoreCase(opt, "exat") || absl::EqualsIgnoreCase(opt, "pxat") ||
               absl::EqualsIgnoreCase(opt, "keepttl")) {
      return done(ErrorReply(
          "ERR syntax error: key expiry (EX, PX, EXAT, PXAT, KEEPTTL) is not supported"));
    } else {
      return done(ErrorReply("ERR syntax error"));
    }
  }
  if (!nx && !xx && !get) {
    ops->Put(args[1], args[2], [call, ops, done = std::move(done)](absl::Status s) mutable {
      done(s.ok() ? SimpleStringReply("OK") : StoreErrorReply(s));
    });
    return;
  }
  Body body = [call, nx, xx, get](std::shared_ptr<KeyOps> o, Done<Result> d) {
    const absl::string_view key = call->args()[1];
    o->Get(key, [call, o, nx, xx, get, d = std::move(d)](absl::StatusOr<Value> old) mutable {
      if (!old.ok()) return d(old.status());
      const bool exists = old->has_value();
      std::string reply;
      RespWriter w(&reply);
      if ((nx && exists) || (xx && !exists)) {
        if (get) {
          w.OptionalBulk(*old);
        } else {
          w.NullBulk();
        }
        return d(std::move(reply));
      }
      if (get) {
        w.OptionalBulk(*old);
      } else {
        w.SimpleString("OK");
      }
      const auto args = call->args();
      o->Put(args[1], args[2],
             [call, o, reply = std::move(reply), d = std::move(d)](absl::Status s) mutable {
               if (!s.ok()) return d(s);
               d(std::move(reply));
             });
    });
  };
  RunAtomically(env, ops, /*needs_txn=*/true, std::move(body), std::move(done));
}

void RunDel(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, ReplyDone done) {
  const size_t keys = call->args().size() - 1;
  Body body = [call](std::shared_ptr<KeyOps> o, Done<Result> d) {
    struct State {
      int64_t removed = 0;
      absl::Status status;
      Done<Result> done;
    };
    auto state = std::make_shared<State>();
    state->done = std::move(d);
    const size_t n = call->args().size() - 1;
    RunSequentially(
        n,
        [call, o, state](size_t i, absl::AnyInvocable<void()> next) {
          if (!state->status.ok()) return next();
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
  Body body = [call](std::shared_ptr<KeyOps> o, Done<Result> d) {
    struct State {
      absl::Status status;
      Done<Result> done;
    };
    auto state = std::make_shared<State>();
    state->done = std::move(d);
    RunSequentially((call->args().size() - 1) / 2,
                    [call, o, state](size_t i, absl::AnyInvocable<void()> next) {
                      if (!state->status.ok()) return next();
                      const auto args = call->args();
                      o->Put(args[1 + 2 * i], args[2 + 2 * i],
                             [call, o, state, next = std::move(next)](absl::Status s) mutable {
                               if (!s.ok()) state->status = s;
                               next();
                             });
                    },
                    [state] {
                      if (!state->status.ok()) return state->done(state->status);
                      state->done(SimpleStringReply("OK"));
                    });
  };
  RunAtomically(env, ops, /*needs_txn=*/pairs > 1, std::move(body), std::move(done));
}

// EXISTS (count == true) and MGET.
void RunMultiGet(CallPtr call, const std::shared_ptr<KeyOps>& ops, bool count, ReplyDone done) {
  const auto keys = call->args().subspan(1);
  ops->MultiGet(keys, [call, ops, count,
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
      for (const Value& v : *values) w.OptionalBulk(v);
    }
    done(std::move(reply));
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
                   done(v.ok() ? IntegerReply(*v) : IncrementErrorReply(v.status()));
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
      return true;
    default:
      return false;
  }
}

void RunDataCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                    std::shared_ptr<KeyOps> ops, ReplyDone done) {
  const CommandId id = call->spec->id;
  if (id == CommandId::kMSet && call->args().size() % 2 == 0) {
    return done(ErrorReply(ArityMessage("mset")));
  }
  if (auto error = CheckSizes(env, *call)) return done(std::move(*error));
  switch (id) {
    case CommandId::kGet:
      return RunGet(std::move(call), ops, std::move(done));
    case CommandId::kSet:
      return RunSet(env, std::move(call), ops, std::move(done));
    case CommandId::kDel:
      return RunDel(env, std::move(call), ops, std::move(done));
    case CommandId::kExists:
      return RunMultiGet(std::move(call), ops, /*count=*/true, std::move(done));
    case CommandId::kMGet:
      return RunMultiGet(std::move(call), ops, /*count=*/false, std::move(done));
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
