// Commands that touch only the connection's own state and reply at once: PING, ECHO,
// SELECT, AUTH, CLIENT (SETNAME, GETNAME, ID), CONFIG GET, COMMAND.
//
//   PING [msg]          +PONG, or msg as a bulk string
//   ECHO msg            msg
//   SELECT 0            +OK (there is one database; any other index is an error)
//   AUTH [default] pw   +OK when pw is the configured password; Redis's errors otherwise
//   CLIENT SETNAME/GETNAME/ID
//   CONFIG GET pattern.. pairs for the matching ones of: save "", appendonly "no",
//                        databases "1", maxclients, port, proto-max-bulk-len
//                        (what redis-benchmark and redis-cli ask for)
//   COMMAND [...]       command_command.h (COUNT, LIST, INFO, DOCS)
#ifndef FARM_KV_RESP_LOCAL_COMMANDS_H_
#define FARM_KV_RESP_LOCAL_COMMANDS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kv/resp/resp_commands.h"

namespace farm::kv::resp {

// What a connection knows about itself.
struct ConnectionState {
  uint64_t id = 0;
  bool authenticated = false;
  std::string name;  // CLIENT SETNAME; empty: none
};

struct LocalEnv {
  std::string password;  // empty: AUTH is not configured
  uint16_t port = 0;
  uint64_t max_clients = 0;
  int64_t max_bulk_bytes = 0;
};

bool IsLocalCommand(CommandId id);

// Runs a local command (arity already checked) and returns its encoded reply.
std::string RunLocalCommand(const CommandSpec& spec, absl::Span<const std::string> args,
                            const LocalEnv& env, ConnectionState& state);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_LOCAL_COMMANDS_H_
