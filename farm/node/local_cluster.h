// LocalCluster: several Nodes in one process on one machine — static membership, one
// fabric backend, every node linked to every other — for examples, benchmarks and
// tests. (A cluster of separate processes is deploy/local-cluster.)
#ifndef FARM_NODE_LOCAL_CLUSTER_H_
#define FARM_NODE_LOCAL_CLUSTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/node/node.h"

namespace farm::node {

struct LocalClusterOptions {
  std::string backend = "shm";  // "shm", "tcp" or "verbs"
  int nodes = 3;
  // verbs: node i uses rdma_devices[i % size] (empty: every node the first active one).
  std::vector<std::string> rdma_devices;
  std::string dir;  // created, and removed by the destructor (unless keep_data)
  // Starts on the nodes' data already in `dir` (a restart) and leaves it there.
  bool keep_data = false;
  uint32_t threads = 2;
  // The last `compute_only_nodes` of the nodes run applications and hold no regions.
  int compute_only_nodes = 0;
  uint32_t replication = 3;
  uint64_t region_bytes = 32u << 20;
  uint64_t capacity_bytes = 256u << 20;
  // The nodes' --log_sync (node.h): off by default — an in-process cluster's data dies
  // with the process — or a durable policy, logging under `dir` (benchmarks).
  std::string log_sync = "off";
  // Changes each node's options before it is created (e.g. to register nothing but
  // change timeouts); `before_start` runs on each created node before Start (e.g.
  // msgRegisterHandler).
  std::function<void(NodeOptions&)> adjust;
  std::function<absl::Status(Node&)> before_start;
};

class LocalCluster {
 public:
  // Starts nodes 1..n; returns once every node is linked to every other (20 s at most).
  // With tcp, a start that loses its probed port to another process is retried (twice)
  // with new ports, `before_start` running again for the new nodes.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();  // stops the nodes, removes the directory

  Node& node(NodeId id) { return *nodes_[id - 1]; }
  int size() const { return static_cast<int>(nodes_.size()); }

 private:
  LocalCluster() = default;
  static absl::StatusOr<std::unique_ptr<LocalCluster>> StartOnce(const LocalClusterOptions& options);
  std::string dir_;
  bool keep_data_ = false;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace farm::node

#endif  // FARM_NODE_LOCAL_CLUSTER_H_
