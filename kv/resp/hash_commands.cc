#include "kv/resp/hash_commands.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kv/resp/float_value.h"
#include "kv/resp/hash_value.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/scan_args.h"
#include "kv/resp/store_replies.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {
namespace {

using CallPtr = std::shared_ptr<const Call>;

// The hash encoding a stored value holds: nullopt for a missing key, WRONGTYPE for a
// string, DataLoss for a corrupt type tag. The view points into `v`.
absl::StatusOr<std::optional<absl::string_view>> HashOf(const Value& v) {
  if (!v.has_value()) return std::nullopt;
  absl::StatusOr<TypedView> typed = DecodeStored(*v);
  if (!typed.ok()) return typed.status();
  if (typed->type != ValueType::kHash) return WrongTypeError();
  return typed->body;
}

// --- Reads: one Get, then `reply(encoding or nullopt, writer)`. ---

using ReadReply = absl::Status (*)(const Call& call, std::optional<absl::string_view> hash,
                                   RespWriter& w);

void RunRead(CallPtr call, const std::shared_ptr<KeyOps>& ops, ReadReply reply, ReplyDone done) {
  ops->Get(call->args()[1],
           [call, ops, reply, done = std::move(done)](absl::StatusOr<Value> v) mutable {
             if (!v.ok()) return done(StoreErrorReply(v.status()));
             absl::StatusOr<std::optional<absl::string_view>> hash = HashOf(*v);
             if (!hash.ok()) return done(StoreErrorReply(hash.status()));
             std::string out;
             RespWriter w(&out);
             if (absl::Status s = reply(*call, *hash, w); !s.ok()) return done(StoreErrorReply(s));
             done(std::move(out));
           });
}

absl::Status HGet(const Call& call, std::optional<absl::string_view> hash, RespWriter& w) {
  std::optional<absl::string_view> value;
  if (hash) {
    absl::StatusOr<std::optional<absl::string_view>> found = FindField(*hash, call.args()[2]);
    if (!found.ok()) return found.status();
    value = *found;
  }
  if (value) {
    w.Bulk(*value);
  } else {
    w.NullBulk();
  }
  return absl::OkStatus();
}

absl::Status HExists(const Call& call, std::optional<absl::string_view> hash, RespWriter& w) {
  bool found = false;
  if (hash) {
    absl::StatusOr<std::optional<absl::string_view>> value = FindField(*hash, call.args()[2]);
    if (!value.ok()) return value.status();
    found = value->has_value();
  }
  w.Integer(found ? 1 : 0);
  return absl::OkStatus();
}

absl::Status HLen(const Call&, std::optional<absl::string_view> hash, RespWriter& w) {
  uint64_t length = 0;
  if (hash) {
    absl::StatusOr<uint64_t> n = HashLength(*hash);
    if (!n.ok()) return n.status();
    length = *n;
  }
  w.Integer(static_cast<int64_t>(length));
  return absl::OkStatus();
}

absl::Status HGetAll(const Call&, std::optional<absl::string_view> hash, RespWriter& w) {
  if (!hash) {
    w.ArrayHeader(0);
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> n = HashLength(*hash);
  if (!n.ok()) return n.status();
  w.ArrayHeader(2 * *n);
  return ForEachField(*hash, [&w](absl::string_view field, absl::string_view value) {
    w.Bulk(field);
    w.Bulk(value);
    return true;
  });
}

// HKEYS (values == false) and HVALS.
absl::Status HKeysOrVals(const Call&, std::optional<absl::string_view> hash, RespWriter& w, bool values) {
  if (!hash) {
    w.ArrayHeader(0);
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> n = HashLength(*hash);
  if (!n.ok()) return n.status();
  w.ArrayHeader(*n);
  return ForEachField(*hash, [&w, values](absl::string_view field, absl::string_view value) {
    w.Bulk(values ? value : field);
    return true;
  });
}

absl::Status HKeys(const Call& call, std::optional<absl::string_view> hash, RespWriter& w) {
  return HKeysOrVals(call, hash, w, /*values=*/false);
}

absl::Status HVals(const Call& call, std::optional<absl::string_view> hash, RespWriter& w) {
  return HKeysOrVals(call, hash, w, /*values=*/true);
}

absl::Status HStrLen(const Call& call, std::optional<absl::string_view> hash, RespWriter& w) {
  size_t length = 0;
  if (hash) {
    absl::StatusOr<std::optional<absl::string_view>> value = FindField(*hash, call.args()[2]);
    if (!value.ok()) return value.status();
    if (value->has_value()) length = (*value)->size();
  }
  w.Integer(static_cast<int64_t>(length));
  return absl::OkStatus();
}

absl::Status HMGet(const Call& call, std::optional<absl::string_view> hash, RespWriter& w) {
  const auto fields = call.args().subspan(2);
  HashValue h;
  if (hash) {
    if (absl::Status s = h.LoadBody(*hash); !s.ok()) return s;
  }
  w.ArrayHeader(fields.size());
  for (const std::string& field : fields) {
    std::optional<absl::string_view> value = h.Get(field);
    if (value) {
      w.Bulk(*value);
    } else {
      w.NullBulk();
    }
  }
  return absl::OkStatus();
}

// HSCAN key cursor [MATCH p] [COUNT n]: a hash is one value, so — as Redis does for its
// small (listpack) hashes — any cursor gets every field MATCH keeps, with its value, in
// one page whose next cursor is 0. A missing key answers the empty scan before the
// options are looked at (Redis's order); the cursor was checked before the Get.
absl::Status HScan(const Call& call, std::optional<absl::string_view> hash, RespWriter& w) {
  w.ArrayHeader(2);
  w.Bulk("0");
  if (!hash) {
    w.ArrayHeader(0);
    return absl::OkStatus();
  }
  ScanOptions options;
  if (std::optional<std::string> error = ParseScanOptions(call.args(), 3, /*allow_type=*/false, options)) {
    return RedisError(*error);
  }
  std::vector<HashPair> kept;
  absl::Status walked = ForEachField(*hash, [&](absl::string_view field, absl::string_view value) {
    if (options.Matches(field)) kept.emplace_back(field, value);
    return true;
  });
  if (!walked.ok()) return walked;
  w.ArrayHeader(2 * kept.size());
  for (const auto& [field, value] : kept) {
    w.Bulk(field);
    w.Bulk(value);
  }
  return absl::OkStatus();
}

// --- Writes: Get, change, then Put (Remove when no field is left), atomically. ---

// Changes `h`, loaded from the key's value, and returns the reply; sets *changed when
// something must be written. An error writes nothing. `scratch` owns bytes that `h`
// may view until it is encoded.
using Change = absl::StatusOr<std::string> (*)(const Call& call, HashValue& h, std::string& scratch,
                                               bool* changed);

void RunWrite(const DataEnv& env, CallPtr call, const std::shared_ptr<KeyOps>& ops, Change change,
              ReplyDone done) {
  const StoreLimits limits = env.limits;
  CommandBody body = [call, limits, change](std::shared_ptr<KeyOps> o, Done<CommandResult> d) {
    o->Get(call->args()[1],
           [call, o, limits, change, d = std::move(d)](absl::StatusOr<Value> old) mutable {
             if (!old.ok()) return d(old.status());
             HashValue h;
             if (absl::Status s = h.Load(*old); !s.ok()) return d(s);
             std::string scratch;
             bool changed = false;
             absl::StatusOr<std::string> reply = change(*call, h, scratch, &changed);
             if (!reply.ok() || !changed) return d(std::move(reply));
             const absl::string_view key = call->args()[1];
             if (h.empty()) {
               o->Remove(key, [call, o, reply = std::move(*reply),
                               d = std::move(d)](absl::StatusOr<bool> r) mutable {
                 if (!r.ok()) return d(r.status());
                 d(std::move(reply));
               });
               return;
             }
             if (absl::Status s = CheckStoredSize(h.EncodedSize(), limits); !s.ok()) return d(s);
             auto encoded = std::make_shared<const std::string>(h.Encode());
             o->Put(key, *encoded,
                    [call, o, encoded, reply = std::move(*reply),
                     d = std::move(d)](absl::Status s) mutable {
                      if (!s.ok()) return d(s);
                      d(std::move(reply));
                    });
           });
  };
  const absl::string_view key = call->args()[1];
  RunAtomicallyOnKey(env, ops, key, std::move(body), std::move(done));
}

absl::StatusOr<std::string> HSet(const Call& call, HashValue& h, std::string&, bool* changed) {
  const auto args = call.args();
  int64_t added = 0;
  for (size_t i = 2; i + 1 < args.size(); i += 2) added += h.Set(args[i], args[i + 1]) ? 1 : 0;
  *changed = true;
  if (call.spec->id == CommandId::kHMSet) return SimpleStringReply("OK");
  return IntegerReply(added);
}

absl::StatusOr<std::string> HSetNx(const Call& call, HashValue& h, std::string&, bool* changed) {
  const auto args = call.args();
  *changed = !h.Get(args[2]).has_value();
  if (*changed) h.Set(args[2], args[3]);
  return IntegerReply(*changed ? 1 : 0);
}

absl::StatusOr<std::string> HDel(const Call& call, HashValue& h, std::string&, bool* changed) {
  int64_t removed = 0;
  for (const std::string& field : call.args().subspan(2)) removed += h.Remove(field) ? 1 : 0;
  *changed = removed > 0;
  return IntegerReply(removed);
}

// The increment was checked before the store was asked (Redis checks it first).
absl::StatusOr<std::string> HIncrBy(const Call& call, HashValue& h, std::string& scratch,
                                    bool* changed) {
  const auto args = call.args();
  int64_t delta = 0, current = 0, next = 0;
  ParseStrictInt64(args[3], &delta);
  if (std::optional<absl::string_view> old = h.Get(args[2])) {
    if (!ParseStrictInt64(*old, &current)) return RedisError("ERR hash value is not an integer");
  }
  if (__builtin_add_overflow(current, delta, &next)) {
    return RedisError("ERR increment or decrement would overflow");
  }
  scratch = absl::StrCat(next);
  h.Set(args[2], scratch);
  *changed = true;
  return IntegerReply(next);
}

absl::StatusOr<std::string> HIncrByFloat(const Call& call, HashValue& h, std::string& scratch,
                                         bool* changed) {
  const auto args = call.args();
  long double value = 0;
  if (std::optional<absl::string_view> old = h.Get(args[2])) {
    std::optional<long double> parsed = ParseRedisLongDouble(*old);
    if (!parsed.has_value()) return RedisError("ERR hash value is not a float");
    value = *parsed;
  }
  value += *ParseRedisLongDouble(args[3]);  // checked before the key was read
  if (std::isnan(value) || std::isinf(value)) return RedisError("ERR increment would produce NaN or Infinity");
  scratch = FormatRedisLongDouble(value);
  h.Set(args[2], scratch);
  *changed = true;
  std::string reply;
  RespWriter(&reply).Bulk(scratch);
  return reply;
}

// For a key over the store's limit, which cannot exist: the reply of a read or HDEL
// of a missing key; an error for the writes, which would create it.
void ReplyForOversizeKey(const Call& call, const StoreLimits& limits, ReplyDone done) {
  ReadReply read = nullptr;
  switch (call.spec->id) {
    case CommandId::kHGet:
      read = HGet;
      break;
    case CommandId::kHMGet:
      read = HMGet;
      break;
    case CommandId::kHGetAll:
      read = HGetAll;
      break;
    case CommandId::kHLen:
      read = HLen;
      break;
    case CommandId::kHExists:
      read = HExists;
      break;
    case CommandId::kHKeys:
      read = HKeys;
      break;
    case CommandId::kHVals:
      read = HVals;
      break;
    case CommandId::kHStrLen:
      read = HStrLen;
      break;
    case CommandId::kHScan:
      read = HScan;
      break;
    case CommandId::kHDel:
      return done(IntegerReply(0));
    default:
      return done(*CheckKeySize(call.args()[1], limits));
  }
  std::string out;
  RespWriter w(&out);
  absl::Status s = read(call, std::nullopt, w);
  done(s.ok() ? std::move(out) : StoreErrorReply(s));
}

}  // namespace

bool IsHashCommand(CommandId id) {
  switch (id) {
    case CommandId::kHSet:
    case CommandId::kHMSet:
    case CommandId::kHGet:
    case CommandId::kHMGet:
    case CommandId::kHGetAll:
    case CommandId::kHDel:
    case CommandId::kHLen:
    case CommandId::kHExists:
    case CommandId::kHIncrBy:
    case CommandId::kHIncrByFloat:
    case CommandId::kHSetNx:
    case CommandId::kHKeys:
    case CommandId::kHVals:
    case CommandId::kHStrLen:
    case CommandId::kHScan:
      return true;
    default:
      return false;
  }
}

void RunHashCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                    std::shared_ptr<KeyOps> ops, ReplyDone done) {
  const CommandId id = call->spec->id;
  const auto args = call->args();
  // Redis's order: the pair count, then the increment (HINCRBYFLOAT's finite), then the
  // key's type.
  if ((id == CommandId::kHSet || id == CommandId::kHMSet) && args.size() % 2 != 0) {
    return done(ErrorReply(ArityMessage(call->spec->name)));
  }
  int64_t delta = 0;
  if (id == CommandId::kHIncrBy && !ParseStrictInt64(args[3], &delta)) {
    return done(NotAnIntegerReply());
  }
  if (id == CommandId::kHIncrByFloat) {
    const std::optional<long double> increment = ParseRedisLongDouble(args[3]);
    if (!increment.has_value()) return done(ErrorReply("ERR value is not a valid float"));
    if (std::isinf(*increment)) return done(ErrorReply("ERR value is NaN or Infinity"));
  }
  if (id == CommandId::kHScan && !ParseScanCursor(args[2]).has_value()) {
    return done(ErrorReply("ERR invalid cursor"));  // before the key is looked up, as Redis
  }
  if (OverKeyLimit(args[1], env.limits))
    return ReplyForOversizeKey(*call, env.limits, std::move(done));
  switch (id) {
    case CommandId::kHSet:
    case CommandId::kHMSet:
      return RunWrite(env, std::move(call), ops, HSet, std::move(done));
    case CommandId::kHDel:
      return RunWrite(env, std::move(call), ops, HDel, std::move(done));
    case CommandId::kHIncrBy:
      return RunWrite(env, std::move(call), ops, HIncrBy, std::move(done));
    case CommandId::kHIncrByFloat:
      return RunWrite(env, std::move(call), ops, HIncrByFloat, std::move(done));
    case CommandId::kHSetNx:
      return RunWrite(env, std::move(call), ops, HSetNx, std::move(done));
    case CommandId::kHGet:
      return RunRead(std::move(call), ops, HGet, std::move(done));
    case CommandId::kHMGet:
      return RunRead(std::move(call), ops, HMGet, std::move(done));
    case CommandId::kHGetAll:
      return RunRead(std::move(call), ops, HGetAll, std::move(done));
    case CommandId::kHLen:
      return RunRead(std::move(call), ops, HLen, std::move(done));
    case CommandId::kHExists:
      return RunRead(std::move(call), ops, HExists, std::move(done));
    case CommandId::kHKeys:
      return RunRead(std::move(call), ops, HKeys, std::move(done));
    case CommandId::kHVals:
      return RunRead(std::move(call), ops, HVals, std::move(done));
    case CommandId::kHStrLen:
      return RunRead(std::move(call), ops, HStrLen, std::move(done));
    case CommandId::kHScan:
      return RunRead(std::move(call), ops, HScan, std::move(done));
    default:
      return done(ErrorReply(absl::StrCat("ERR '", call->spec->name, "' is not a hash command")));
  }
}

}  // namespace farm::kv::resp
