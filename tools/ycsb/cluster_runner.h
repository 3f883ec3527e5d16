// RunClusterWorkload: YCSB as application threads inside a running cluster of node
// processes (deploy/local-cluster start --services kv, or farm_node on several
// machines). The runner joins the cluster through ZooKeeper as a compute-only member —
// a node that runs application threads and holds no regions (node::NodeOptions::
// compute_only), so its joining and leaving move no data — opens the cluster's kv table
// from the catalog, and runs one FarmDriver per worker thread (RunDrivers): loads the
// records, then the transaction phase. Why a compute-only member and not a workload
// run by the storage nodes: the nodes' code stays the service's alone, the driver
// measures the same application threads as RunFarmWorkload does in one process, and
// the cluster sees the load a FaRM application machine would bring.
//
// The table is the cluster's (sized by farm_node --kv_buckets): loading more records
// than it has slots fails the load. The report's backend is "cluster".
#ifndef FARM_TOOLS_YCSB_CLUSTER_RUNNER_H_
#define FARM_TOOLS_YCSB_CLUSTER_RUNNER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "tools/common/compute_member.h"
#include "tools/ycsb/backends.h"
#include "tools/ycsb/report.h"

namespace farm::ycsb {

struct ClusterRunOptions {
  // How to join: the cluster's ZooKeeper and secret, this member's id, fabric and
  // address (its `threads` come from the run's config).
  tools::ComputeMemberOptions member;
  uint32_t neighbourhood = 8;   // the table's H, as the cluster's farm_node --kv_neighbourhood
  std::string layout = "hopscotch";  // the table layout, as the cluster's farm_node --kv_layout
  int window = 16;              // operations in flight per application thread
};

// InvalidArgument for bad options; the node's error when it cannot join; the table's
// when it cannot open; the load's first error.
absl::StatusOr<RunReport> RunClusterWorkload(const RunConfig& config, const ClusterRunOptions& options);

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_CLUSTER_RUNNER_H_
