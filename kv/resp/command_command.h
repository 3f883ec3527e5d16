// COMMAND, as Redis 7 answers it, for the kv service's own commands (the table in
// resp_commands.cc; another service's commands on the same port are not listed):
//
//   COMMAND                 every command's entry
//   COMMAND INFO [name..]   the named ones' entries (nil for an unknown name); none
//                           named: every command's
//   COMMAND COUNT           how many commands there are
//   COMMAND LIST            their names
//   COMMAND DOCS [name..]   an empty array (no documentation)
//
// An entry is Redis 7's ten fields: name, arity, flags (readonly or write; no-auth for
// AUTH and QUIT), first key, last key, key step, and empty arrays for ACL categories,
// tips, key specifications and subcommands. Clients use it to find a command's keys.
#ifndef FARM_KV_RESP_COMMAND_COMMAND_H_
#define FARM_KV_RESP_COMMAND_COMMAND_H_

#include <string>

#include "absl/types/span.h"

namespace farm::kv::resp {

// The reply to `args` (args[0] is COMMAND, any case).
std::string CommandCommandReply(absl::Span<const std::string> args);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_COMMAND_COMMAND_H_
