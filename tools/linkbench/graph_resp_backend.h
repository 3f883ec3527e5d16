// The `graph-resp` backend: the graph service of a cluster's nodes (farm_node
// --services=graph, graph/resp/README.md) over RESP with hiredis. Each Connection opens
// one TCP connection, to the endpoints in turn (round-robin over the connections), and
// maps every operation to one command, its arguments binary-safe (redisCommandArgv with
// lengths):
//   AddNode NODE.ADD   GetNode NODE.GET   UpdateNode NODE.UPDATE   DeleteNode NODE.DELETE
//   ResetNodeIds NODE.RESET   AddLink LINK.ADD   DeleteLink LINK.DELETE [EXPUNGE]
//   GetLinks LINK.GET   GetLinkList LINK.RANGE   CountLinks LINK.COUNT
// The bulk calls of the load are pipelined, in windows of kPipelineWindow commands:
// AddNodes as one NODE.ADD per node (the ids are the replies: consecutive while no
// other connection adds nodes, as in LinkBench's load), AddLinks as one LINK.ADD per
// link (the service has no bulk command, so each link is its own transaction).
//
// Errors: connection failures, timeouts and -TRYAGAIN are Unavailable (the connection
// reconnects on its next call); -ERR about arguments (sizes, limits, ranges) is
// InvalidArgument; -OOM ResourceExhausted; anything else Internal. Arguments the
// service would refuse are refused here first (graph::CheckNode / CheckLink), so a
// pipelined batch never stops half-way on bad data.
//
// Settings (BackendOptions): graph_resp = host:port[,host:port...] (required; one per
// node, e.g. deploy/local-cluster --graph-port), graph_resp_timeout_ms (default 30000,
// for connecting and for each reply).
//
// The store is the cluster's graph, not a fresh one (see farm_backend.h).
// Threads: as backend.h.
#ifndef FARM_TOOLS_LINKBENCH_GRAPH_RESP_BACKEND_H_
#define FARM_TOOLS_LINKBENCH_GRAPH_RESP_BACKEND_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "tools/linkbench/backend.h"
#include "tools/linkbench/backend_registry.h"

namespace farm::linkbench {

// Commands in flight per pipelined batch (replies are read before the next window is
// sent, which bounds the memory on both sides).
inline constexpr size_t kPipelineWindow = 512;

// InvalidArgument for a bad endpoint list; Unavailable when an endpoint does not answer
// PING.
absl::StatusOr<std::unique_ptr<Backend>> OpenGraphRespBackend(const BackendOptions& options);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_GRAPH_RESP_BACKEND_H_
