// GraphRequest: a graph command's arguments parsed into the store's types and checked
// against LinkBench's limits (graph/types.h), before anything reaches the store.
//
// Argument types (LinkBench's):        reply when not met
//   node id, start_id      int64       -ERR value is not an integer or out of range
//   node type, node time   int32       (also for any integer outside its type's range)
//   node version           int64
//   link id1, type, id2    int64
//   link version           int32
//   link time, min/max     int64
//   visibility             0 or 1      -ERR visibility must be 0 (hidden) or 1 (visible)
//   offset                 0..2^32-1   -ERR offset is out of range, must be between 0 and 4294967295
//   limit                  0..10000    -ERR limit is out of range, must be between 0 and 10000
//   node data              <= 1 MiB    -ERR node data is too large (N bytes; the limit is 1048576)
//   link data              <= 255 B    -ERR link data is too large (N bytes; the limit is 255)
//   LINK.DELETE's 5th word EXPUNGE     -ERR syntax error
// Integers follow Redis's strict syntax (resp/strict_int.h): "01", "+1", " 1" are not.
// Arguments are checked left to right; the first failure is the reply.
//
// Stateless: callable from any thread.
#ifndef FARM_GRAPH_RESP_GRAPH_REQUEST_H_
#define FARM_GRAPH_RESP_GRAPH_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "graph/resp/graph_commands.h"
#include "graph/types.h"

namespace farm::graph {

// Only the fields of the request's command are set.
struct GraphRequest {
  GraphCommandId id = GraphCommandId::kNodeAdd;
  Node node;                  // NODE.ADD/UPDATE (all fields), NODE.GET/DELETE (id, type)
  std::vector<Node> nodes;    // NODE.LOAD
  Link link;                  // LINK.ADD (all), LINK.DELETE (id1 type id2), GET/COUNT (id1 type)
  std::vector<int64_t> id2s;  // LINK.GET
  std::vector<Link> links;    // LINK.LOAD (id1 and type in `link`)
  uint64_t load_token = 0;    // LINK.LOAD: the connection's (GraphSessionOptions)
  LinkRange range;            // LINK.RANGE
  bool expunge = false;       // LINK.DELETE ... EXPUNGE
  int64_t start_id = 0;       // NODE.RESET
};

// Parses the arguments of a graph command (spec.uses_store; arity already checked) into
// *request. Data arguments are moved out of `args` (the parser's reusable strings).
// Returns the error reply text (without '-' and CRLF) when an argument is refused.
std::optional<std::string> ParseGraphRequest(const GraphCommandSpec& spec,
                                             absl::Span<std::string> args, GraphRequest* request);

// The integer argument syntax: Redis's strict int64, then the range of T.
bool ParseInt64Arg(const std::string& arg, int64_t* out);
bool ParseInt32Arg(const std::string& arg, int32_t* out);

// "ERR value is not an integer or out of range"
inline constexpr char kNotAnInteger[] = "ERR value is not an integer or out of range";

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_REQUEST_H_
