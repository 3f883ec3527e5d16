#include "kv/resp/resp_commands.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace farm::kv::resp {
namespace {

// name, id, arity, access, first/last/step key, allowed before AUTH, not queued.
constexpr CommandSpec kCommands[] = {
    {"get", CommandId::kGet, 2, Access::kRead, 1, 1, 1},
    {"set", CommandId::kSet, -3, Access::kWrite, 1, 1, 1},
    {"ping", CommandId::kPing, -1, Access::kLocal},
    {"echo", CommandId::kEcho, 2, Access::kLocal},
    {"del", CommandId::kDel, -2, Access::kWrite, 1, -1, 1},
    {"exists", CommandId::kExists, -2, Access::kRead, 1, -1, 1},
    {"mget", CommandId::kMGet, -2, Access::kRead, 1, -1, 1},
    {"mset", CommandId::kMSet, -3, Access::kWrite, 1, -1, 2},
    {"incr", CommandId::kIncr, 2, Access::kWrite, 1, 1, 1},
    {"decr", CommandId::kDecr, 2, Access::kWrite, 1, 1, 1},
    {"incrby", CommandId::kIncrBy, 3, Access::kWrite, 1, 1, 1},
    {"decrby", CommandId::kDecrBy, 3, Access::kWrite, 1, 1, 1},
    {"type", CommandId::kType, 2, Access::kRead, 1, 1, 1},
    {"ttl", CommandId::kTtl, 2, Access::kRead, 1, 1, 1},
    {"pttl", CommandId::kPTtl, 2, Access::kRead, 1, 1, 1},
    {"expiretime", CommandId::kExpireTime, 2, Access::kRead, 1, 1, 1},
    {"pexpiretime", CommandId::kPExpireTime, 2, Access::kRead, 1, 1, 1},
    {"persist", CommandId::kPersist, 2, Access::kWrite, 1, 1, 1},
    {"getex", CommandId::kGetEx, -2, Access::kWrite, 1, 1, 1},
    {"setnx", CommandId::kSetNx, 3, Access::kWrite, 1, 1, 1},
    {"getset", CommandId::kGetSet, 3, Access::kWrite, 1, 1, 1},
    {"getdel", CommandId::kGetDel, 2, Access::kWrite, 1, 1, 1},
    {"append", CommandId::kAppend, 3, Access::kWrite, 1, 1, 1},
    {"strlen", CommandId::kStrLen, 2, Access::kRead, 1, 1, 1},
    {"msetnx", CommandId::kMSetNx, -3, Access::kWrite, 1, -1, 2},
    {"getrange", CommandId::kGetRange, 4, Access::kRead, 1, 1, 1},
    {"substr", CommandId::kSubStr, 4, Access::kRead, 1, 1, 1},
    {"setrange", CommandId::kSetRange, 4, Access::kWrite, 1, 1, 1},
    {"incrbyfloat", CommandId::kIncrByFloat, 3, Access::kWrite, 1, 1, 1},
    {"hset", CommandId::kHSet, -4, Access::kWrite, 1, 1, 1},
    {"hmset", CommandId::kHMSet, -4, Access::kWrite, 1, 1, 1},
    {"hget", CommandId::kHGet, 3, Access::kRead, 1, 1, 1},
    {"hmget", CommandId::kHMGet, -3, Access::kRead, 1, 1, 1},
    {"hgetall", CommandId::kHGetAll, 2, Access::kRead, 1, 1, 1},
    {"hdel", CommandId::kHDel, -3, Access::kWrite, 1, 1, 1},
    {"hlen", CommandId::kHLen, 2, Access::kRead, 1, 1, 1},
    {"hexists", CommandId::kHExists, 3, Access::kRead, 1, 1, 1},
    {"hincrby", CommandId::kHIncrBy, 4, Access::kWrite, 1, 1, 1},
    {"hsetnx", CommandId::kHSetNx, 4, Access::kWrite, 1, 1, 1},
    {"hkeys", CommandId::kHKeys, 2, Access::kRead, 1, 1, 1},
    {"hvals", CommandId::kHVals, 2, Access::kRead, 1, 1, 1},
    {"hstrlen", CommandId::kHStrLen, 3, Access::kRead, 1, 1, 1},
    {"hincrbyfloat", CommandId::kHIncrByFloat, 4, Access::kWrite, 1, 1, 1},
    {"hscan", CommandId::kHScan, -3, Access::kRead, 1, 1, 1},
    {"rename", CommandId::kRename, 3, Access::kWrite, 1, 2, 1},
    {"renamenx", CommandId::kRenameNx, 3, Access::kWrite, 1, 2, 1},
    {"copy", CommandId::kCopy, -3, Access::kWrite, 1, 2, 1},
    {"dbsize", CommandId::kDbSize, 1, Access::kExclusive},
    {"info", CommandId::kInfo, -1, Access::kExclusive},
    {"scan", CommandId::kScan, -2, Access::kExclusive},
    {"keys", CommandId::kKeys, 2, Access::kExclusive},
    {"flushall", CommandId::kFlushAll, -1, Access::kExclusive},
    {"flushdb", CommandId::kFlushDb, -1, Access::kExclusive},
    {"multi", CommandId::kMulti, 1, Access::kLocal, 0, 0, 0, false, true},
    {"exec", CommandId::kExec, 1, Access::kExclusive, 0, 0, 0, false, true},
    {"discard", CommandId::kDiscard, 1, Access::kExclusive, 0, 0, 0, false, true},
    {"watch", CommandId::kWatch, -2, Access::kExclusive, 1, -1, 1, false, true},
    {"unwatch", CommandId::kUnwatch, 1, Access::kExclusive},
    {"auth", CommandId::kAuth, -2, Access::kLocal, 0, 0, 0, true, false},
    {"quit", CommandId::kQuit, -1, Access::kLocal, 0, 0, 0, true, true},
    {"select", CommandId::kSelect, 2, Access::kLocal},
    {"client", CommandId::kClient, -2, Access::kLocal},
    {"config", CommandId::kConfig, -2, Access::kLocal},
    {"command", CommandId::kCommand, -1, Access::kLocal},
};

constexpr CommandSpec kExtensionSpec = {"(extension)", CommandId::kExtension, -1, Access::kExclusive};

// Redis formats arguments with "%s": a NUL byte ends them.
}  // namespace

const CommandSpec& ExtensionCommandSpec() { return kExtensionSpec; }

absl::Span<const CommandSpec> AllCommands() { return kCommands; }

const CommandSpec* FindCommand(absl::string_view name) {
  for (const CommandSpec& spec : kCommands) {
    if (spec.name.size() == name.size() && absl::EqualsIgnoreCase(spec.name, name)) return &spec;
  }
  return nullptr;
}

bool ArityOk(const CommandSpec& spec, size_t argc) {
  if (spec.arity >= 0) return argc == static_cast<size_t>(spec.arity);
  return argc >= static_cast<size_t>(-spec.arity);
}

size_t Call::bytes() const {
  size_t total = sizeof(Call);
  for (size_t i = 0; i < argc; ++i) total += argv[i].size() + sizeof(std::string);
  return total;
}

}  // namespace farm::kv::resp
