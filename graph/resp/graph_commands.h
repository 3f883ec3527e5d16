// The graph service's command table: each command's name, id and arity, whether it runs
// on the GraphStore; and Redis 7's texts for unknown commands and wrong arities
// (clients and tests match on them).
//
// Stateless and immutable: callable from any thread.
#ifndef FARM_GRAPH_RESP_GRAPH_COMMANDS_H_
#define FARM_GRAPH_RESP_GRAPH_COMMANDS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "resp/redis_errors.h"

namespace farm::graph {

enum class GraphCommandId : uint8_t {
  // Connection commands: answered at once, no store (graph_local_commands.h).
  kPing,
  kEcho,
  kQuit,
  kSelect,
  kCommand,
  // Graph commands: one GraphStore operation each (graph_ops.h).
  kNodeAdd,
  kNodeLoad,
  kNodeGet,
  kNodeUpdate,
  kNodeDelete,
  kNodeReset,
  kLinkAdd,
  kLinkLoad,
  kLinkDelete,
  kLinkGet,
  kLinkRange,
  kLinkCount,
};

struct GraphCommandSpec {
  absl::string_view name;  // lowercase, as error messages print it
  GraphCommandId id;
  // Redis's convention: n > 0 means exactly n words (the name included), -n at least n.
  int arity;
  bool uses_store;  // a graph command (one store operation) rather than a local one
};

// Case-insensitive lookup; nullptr for an unknown command.
const GraphCommandSpec* FindGraphCommand(absl::string_view name);
// Every command, in table order (COMMAND COUNT).
absl::Span<const GraphCommandSpec> AllGraphCommands();
bool ArityOk(const GraphCommandSpec& spec, size_t argc);

// Error texts: resp/redis_errors.h's, shared by every RESP service.
using ::farm::resp::ArityMessage;
using ::farm::resp::UnknownCommandMessage;

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_COMMANDS_H_
