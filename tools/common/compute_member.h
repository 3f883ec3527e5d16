// ComputeMember: this process as a compute-only member of a running cluster of node
// processes (farm_node): it joins through ZooKeeper, runs application threads, holds no
// regions, so its joining and leaving move no data. The tools' way of running workloads
// inside a cluster (ycsb --backend=cluster, tx_bench --zookeeper).
//
//   auto m = ComputeMember::Join({.zookeeper = "127.0.0.1:2181", .secret_file = ...},
//                                [](Host& host) { return InstallHandlers(host); });
//   (*m)->host().context(0).Post(...);
//   (*m)->Leave();   // also on destruction
#ifndef FARM_TOOLS_COMMON_COMPUTE_MEMBER_H_
#define FARM_TOOLS_COMMON_COMPUTE_MEMBER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/node_host.h"
#include "farm/node/node.h"

namespace farm::tools {

struct ComputeMemberOptions {
  std::string zookeeper;         // host:port[,...] of the cluster's ensemble (required)
  std::string cluster = "farm";  // the cluster's name
  std::string secret_file;       // the cluster's secret (required)
  uint32_t node_id = 0;          // 0: one derived from the process id, above a million
  std::string fabric = "auto";   // as farm_node --fabric
  std::string listen = "127.0.0.1:0";
  uint32_t threads = 2;
  absl::Duration join_timeout = absl::Seconds(30);
  // Its ZooKeeper session: when the process dies, the cluster drops it (and recovers the
  // transactions it coordinated) this long after.
  absl::Duration session_timeout = absl::Seconds(4);
  tx::TxOptions tx;  // crash tests set a commit-step hook here
};

class ComputeMember {
 public:
  // Creates the node, runs `before_start` on its Host (handlers, services), starts it and
  // waits until it is linked to every member. InvalidArgument for bad options; the
  // node's error; Unavailable when it does not join in time.
  static absl::StatusOr<std::unique_ptr<ComputeMember>> Join(
      const ComputeMemberOptions& options, std::function<absl::Status(Host&)> before_start = nullptr);
  ~ComputeMember();  // Leave()

  Host& host() { return *host_; }
  node::Node& node() { return *node_; }
  // The storage members' regions this member can allocate near, by primary: for each
  // member that holds data, the regions it is primary of in the current configuration
  // (asked from its admin port).
  absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> RegionsByPrimary();
  // Stops the node (leaves the cluster) and removes its directory; idempotent. Stop
  // what runs on its threads first.
  void Leave();

 private:
  ComputeMember() = default;
  std::string dir_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<NodeHost> host_;
};

}  // namespace farm::tools

#endif  // FARM_TOOLS_COMMON_COMPUTE_MEMBER_H_
