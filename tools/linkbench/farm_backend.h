// The `farm` backend: the graph (Tao on FaRM, graph/graph_client.h) driven by
// application threads inside a running cluster of node processes (farm_node
// --services=graph, e.g. deploy/local-cluster start --services graph). Opening the
// backend joins the cluster through ZooKeeper as a compute-only member
// (tools/common/compute_member.h; it holds no data, so joining and leaving move none)
// with graph::GraphNode installed before it starts, then opens the graph from the
// cluster's index. Each Connection is bound to one worker thread of the member
// (connections are spread round-robin over the threads): an operation is posted to that
// thread's GraphClient and the caller blocks until its continuation has run there.
//
// Settings (BackendOptions): zookeeper (host:port, required), cluster (default farm),
// secret_file (required), threads (worker threads of the member, default 2), fabric
// (default auto), listen (the member's fabric address, default 127.0.0.1:0).
//
// The store is the cluster's graph, not a fresh one: a second run (or a second backend
// on the same cluster) loads over what the first left (nodes are overwritten from
// startid1, links upserted; links and nodes the first request phase added stay).
//
// Summary(): the graph readers' and clients' counters summed over the member's threads,
// read on each thread (RunOnThread), since StartMeasuring: the measured requests'
// lock-free operations and their fabric READs.
// Threads: as backend.h; Summary from any thread except the member's workers.
#ifndef FARM_TOOLS_LINKBENCH_FARM_BACKEND_H_
#define FARM_TOOLS_LINKBENCH_FARM_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "tools/linkbench/backend.h"
#include "tools/linkbench/backend_registry.h"

namespace farm::linkbench {

// InvalidArgument for bad settings; the member's error when it cannot join; the graph's
// when it cannot open.
absl::StatusOr<std::unique_ptr<Backend>> OpenFarmBackend(const BackendOptions& options);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_FARM_BACKEND_H_
