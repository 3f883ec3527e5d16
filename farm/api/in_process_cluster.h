// InProcessCluster: several nodes in this process — one fabric backend, static
// membership, every node linked to every other — each handed to services as a Host. For
// examples, unit tests and benchmarks that need no separate processes; a cluster of
// node processes is deploy/local-cluster with farm_node --services. Services run the
// same code on both.
//
//   InProcessClusterOptions o;
//   o.before_start = [](Host& host) { return MyService::Install(host); };
//   absl::StatusOr<std::unique_ptr<InProcessCluster>> c = InProcessCluster::Start(o);
//   RunOnThread((*c)->host(1), 0, [](Context& ctx) { ... });
#ifndef FARM_API_IN_PROCESS_CLUSTER_H_
#define FARM_API_IN_PROCESS_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"

namespace farm {

namespace node {
class LocalCluster;
}  // namespace node

struct InProcessClusterOptions {
  std::string backend = "shm";  // "shm", "tcp" or "verbs"
  int nodes = 3;
  // verbs: node i uses rdma_devices[i % size] (empty: every node the first active one).
  std::vector<std::string> rdma_devices;
  std::string dir;  // created, and removed when the cluster is destroyed (unless keep_data)
  bool keep_data = false;  // start on the data in `dir` (a restart) and leave it there
  uint32_t threads = 2;
  // The last `compute_only_nodes` of the nodes run applications and hold no data
  // (Host::compute_only), as an application machine joined to a cluster does.
  int compute_only_nodes = 0;
  uint32_t replication = 3;
  uint64_t region_bytes = 32u << 20;
  uint64_t capacity_bytes = 256u << 20;
  // The nodes' log: off (nothing outlives the process), or always, interval:MS, none
  // (farm_node --log_sync), logged under `dir`.
  std::string log_sync = "off";
  // With a log: checkpoint once this much log accumulates (farm_node --checkpoint_mb); 0 never.
  uint64_t checkpoint_bytes = 256ull << 20;
  // Single-machine commits readable by lock-free readers until they apply (farm_node
  // --readable_commits).
  bool readable_commits = true;
  // Runs on each node's Host before the node starts (install services here). With
  // tcp, a start that lost its probed port is retried with new nodes: it runs again.
  std::function<absl::Status(Host&)> before_start;
};

class InProcessCluster {
 public:
  // Starts nodes 1..n; returns once every node is linked to every other.
  static absl::StatusOr<std::unique_ptr<InProcessCluster>> Start(const InProcessClusterOptions& options);
  ~InProcessCluster();  // stops the nodes, removes the directory

  Host& host(NodeId id) const { return *hosts_.at(id); }
  int size() const { return static_cast<int>(hosts_.size()); }

 private:
  InProcessCluster();
  std::map<NodeId, std::unique_ptr<Host>> hosts_;
  std::unique_ptr<node::LocalCluster> cluster_;  // destroyed before the hosts
};

}  // namespace farm

#endif  // FARM_API_IN_PROCESS_CLUSTER_H_
