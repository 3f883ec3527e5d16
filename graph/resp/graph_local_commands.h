// The graph service's connection commands: no store, answered at once.
//
//   PING [msg]      +PONG, or msg as a bulk string
//   ECHO msg        msg
//   SELECT 0        +OK (one database; any other index: -ERR DB index is out of range)
//   COMMAND ...     COMMAND COUNT: the number of commands; anything else (COMMAND,
//                   COMMAND DOCS, COMMAND INFO ...): an empty array — enough for
//                   redis-cli, which then uses its built-in help
// QUIT is the session's (it closes the connection); HELLO is not a command here, so it
// gets the unknown-command error, which RESP3-capable clients take as "RESP2 only".
//
// Stateless: callable from any thread.
#ifndef FARM_GRAPH_RESP_GRAPH_LOCAL_COMMANDS_H_
#define FARM_GRAPH_RESP_GRAPH_LOCAL_COMMANDS_H_

#include <string>

#include "absl/types/span.h"
#include "graph/resp/graph_commands.h"

namespace farm::graph {

// The encoded reply of a local command (!spec.uses_store, arity already checked).
std::string RunLocalCommand(const GraphCommandSpec& spec, absl::Span<const std::string> args);

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_LOCAL_COMMANDS_H_
