// Node: one FaRM node process's runtime — fabric, worker threads with their event
// loops, messaging, its region, membership and the admin port — composed from options.
//
// Start order: fabric (listening), worker loops, messenger, admin port, membership
// (join: blocks until a configuration includes this node), then the node's region
// (placed so that this node is its primary) and links to every member. Each new
// configuration links the node to members it has not linked yet (on a connector
// thread; a slow peer never blocks the membership thread). Stop undoes it in reverse:
// leave membership first, so peers see the node go at once.
#ifndef FARM_NODE_NODE_H_
#define FARM_NODE_NODE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/base/mutex.h"
#include "farm/base/region.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "farm/node/admin.pb.h"
#include "farm/node/admin_server.h"
#include "membership/membership.h"

namespace farm::node {

struct NodeOptions {
  NodeId node_id = 0;
  std::string cluster = "farm";
  std::string zookeeper;       // "host:port[,...]"; exclusive with static_members
  std::string static_members;  // "ID=BACKEND:ADDRESS,..." (membership/static_membership.h)
  std::string fabric = "auto";  // auto, shm, tcp
  std::string listen = "127.0.0.1:0";        // tcp fabric
  std::string admin_listen = "127.0.0.1:0";
  std::string data_dir;        // default ./farm-data/node-<id>
  std::string cluster_secret;
  std::string host_id;         // default: hostname and network namespace
  uint32_t threads = 2;
  uint64_t region_bytes = 2ull << 30;
  uint64_t capacity_bytes = 0;  // default: region_bytes
  uint32_t replication = 3;
  uint32_t virtual_rings = 100;
  absl::Duration session_timeout = absl::Seconds(4);
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration join_timeout = absl::Seconds(30);
  absl::Duration spin = absl::Microseconds(50);
};

// Checks options and fills defaults; the error names the offending option.
absl::StatusOr<NodeOptions> ResolveNodeOptions(NodeOptions options);
// The fabric backend `auto` resolves to: shm when every member is on this host (a
// static list of shm locators, or a ZooKeeper ensemble on loopback), else tcp.
std::string ResolveBackend(const NodeOptions& options);
// This machine's identity for shm eligibility: hostname plus network namespace.
std::string DefaultHostId();

class Node {
 public:
  static absl::StatusOr<std::unique_ptr<Node>> Create(const NodeOptions& options);
  ~Node();

  absl::Status Start();
  void Stop();  // idempotent

  NodeStats Stats() const;
  const NodeOptions& options() const { return options_; }
  membership::Membership& membership() const { return *membership_; }
  Messenger& messenger() const { return *messenger_; }
  Fabric& fabric() const { return *fabric_; }
  const std::string& admin_address() const { return admin_->address(); }
  // The node's region (after Start).
  const Region* region() const { return region_.get(); }

 private:
  explicit Node(const NodeOptions& options);
  absl::Status CreateMembership();
  absl::Status CreateRegion();
  void OnConfiguration(std::shared_ptr<const membership::Configuration> config);
  void ConnectLoop();

  const NodeOptions options_;
  const std::string backend_;
  const absl::Time started_;
  std::unique_ptr<Region> region_;  // declared first: outlives the fabric it is registered with
  std::unique_ptr<Fabric> fabric_;
  std::vector<std::unique_ptr<LoopThread>> loops_;
  std::unique_ptr<Messenger> messenger_;
  std::unique_ptr<AdminServer> admin_;
  std::unique_ptr<membership::Membership> membership_;

  Mutex mu_;
  CondVar connect_cv_;
  std::shared_ptr<const membership::Configuration> latest_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread connector_;
  // Set once Start has built everything: the admin thread reads only after it.
  std::atomic<bool> started_up_{false};
};

}  // namespace farm::node

#endif  // FARM_NODE_NODE_H_
