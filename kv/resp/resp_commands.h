// The command table of the RESP service: names, arities, which keys a command touches
// and how it may overlap with other commands of the same connection; and Call, one
// parsed command that owns its arguments while it runs.
//
// Error texts follow Redis 7 exactly (clients and tests match on them).
#ifndef FARM_KV_RESP_RESP_COMMANDS_H_
#define FARM_KV_RESP_RESP_COMMANDS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "resp/redis_errors.h"

namespace farm::kv::resp {

enum class CommandId : uint8_t {
  kPing,
  kEcho,
  kGet,
  kSet,
  kDel,
  kExists,
  kMGet,
  kMSet,
  kIncr,
  kDecr,
  kIncrBy,
  kDecrBy,
  kType,
  kTtl,
  kPTtl,
  kExpireTime,
  kPExpireTime,
  kPersist,
  kGetEx,
  kSetNx,
  kGetSet,
  kGetDel,
  kAppend,
  kStrLen,
  kMSetNx,
  kGetRange,
  kSubStr,
  kSetRange,
  kIncrByFloat,
  kHSet,
  kHMSet,
  kHGet,
  kHMGet,
  kHGetAll,
  kHDel,
  kHLen,
  kHExists,
  kHIncrBy,
  kHSetNx,
  kHKeys,
  kHVals,
  kHStrLen,
  kHIncrByFloat,
  kHScan,
  kRename,
  kRenameNx,
  kCopy,
  kDbSize,
  kInfo,
  kScan,
  kKeys,
  kFlushAll,
  kFlushDb,
  kMulti,
  kExec,
  kDiscard,
  kWatch,
  kUnwatch,
  kAuth,
  kQuit,
  kSelect,
  kClient,
  kConfig,
  kCommand,
  kExtension,  // another service's command (resp/command_extension.h)
};

// How a command may overlap with earlier and later commands of its connection (the
// session starts commands in order; see resp_session.h, invariant 2).
enum class Access : uint8_t {
  kLocal,      // touches only the connection's state: runs at once
  kRead,       // reads its keys: may overlap anything that does not write them
  kWrite,      // writes its keys: may overlap anything that does not touch them
  kExclusive,  // waits for every earlier command and holds back every later one
};

struct CommandSpec {
  absl::string_view name;  // lowercase, as error messages print it
  CommandId id;
  // Redis's convention: n > 0 means exactly n words (the name included), -n at least n.
  int arity;
  Access access;
  // Keys are args[first_key], args[first_key + key_step], ... up to args[last_key]
  // (-1: the last word). first_key == 0: no keys.
  int first_key = 0;
  int last_key = 0;
  int key_step = 0;
  bool allowed_before_auth = false;  // AUTH, QUIT
  bool not_queued = false;           // runs even after MULTI: MULTI EXEC DISCARD WATCH QUIT
};

// Case-insensitive lookup; nullptr for an unknown command.
const CommandSpec* FindCommand(absl::string_view name);
// Every command of the table, in its order (COMMAND lists them).
absl::Span<const CommandSpec> AllCommands();
// The spec of every command a session's CommandExtension handles: exclusive, any arity
// (the extension checks its own), no keys of this store.
const CommandSpec& ExtensionCommandSpec();
bool ArityOk(const CommandSpec& spec, size_t argc);

// The error texts (UnknownCommandMessage, ArityMessage, UnknownSubcommandMessage) are
// resp/redis_errors.h's, shared by every RESP service.
using ::farm::resp::ArityMessage;
using ::farm::resp::UnknownCommandMessage;
using ::farm::resp::UnknownSubcommandMessage;

// Calls fn(key) for each key argument of a command (none when args are too few).
template <typename Fn>
void ForEachKey(const CommandSpec& spec, absl::Span<const std::string> args, Fn&& fn) {
  if (spec.first_key <= 0) return;
  const int argc = static_cast<int>(args.size());
  const int last = spec.last_key < 0 ? argc + spec.last_key : spec.last_key;
  for (int i = spec.first_key; i <= last && i < argc; i += spec.key_step) fn(args[i]);
}

// One command of a connection, from parsing until its reply is in order. Store
// operations read its arguments through string_views, so whatever runs the command
// holds a std::shared_ptr<const Call> until its last store callback has run.
struct Call {
  const CommandSpec* spec = nullptr;
  std::vector<std::string> argv;  // capacity reused between commands; [0, argc) is valid
  size_t argc = 0;

  absl::Span<const std::string> args() const { return absl::MakeConstSpan(argv.data(), argc); }
  // Bytes this call holds, for memory accounting.
  size_t bytes() const;
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_RESP_COMMANDS_H_
