#include "farm/api/in_process_cluster.h"

#include <utility>

#include "farm/api/node_host.h"
#include "farm/node/local_cluster.h"

namespace farm {

InProcessCluster::InProcessCluster() = default;

InProcessCluster::~InProcessCluster() { cluster_.reset(); }

absl::StatusOr<std::unique_ptr<InProcessCluster>> InProcessCluster::Start(const InProcessClusterOptions& options) {
  if (options.compute_only_nodes < 0 || options.compute_only_nodes >= options.nodes) {
    return absl::InvalidArgumentError("compute-only nodes: 0 to nodes - 1 (some node must hold the data)");
  }
  std::unique_ptr<InProcessCluster> c(new InProcessCluster());
  node::LocalClusterOptions o;
  o.backend = options.backend;
  o.nodes = options.nodes;
  o.rdma_devices = options.rdma_devices;
  o.dir = options.dir;
  o.threads = options.threads;
  o.compute_only_nodes = options.compute_only_nodes;
  o.replication = options.replication;
  o.region_bytes = options.region_bytes;
  o.capacity_bytes = options.capacity_bytes;
  o.log_sync = options.log_sync;
  o.keep_data = options.keep_data;
  o.adjust = [checkpoint_bytes = options.checkpoint_bytes,
              readable_commits = options.readable_commits](node::NodeOptions& n) {
    n.checkpoint_bytes = checkpoint_bytes;
    n.tx.readable_commits = readable_commits;
  };
  InProcessCluster* self = c.get();
  o.before_start = [self, before = options.before_start](node::Node& n) -> absl::Status {
    auto host = std::make_unique<NodeHost>(&n);
    Host& h = *host;
    self->hosts_[h.self()] = std::move(host);  // a retried start replaces the node's host
    return before ? before(h) : absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> started = node::LocalCluster::Start(o);
  if (!started.ok()) return started.status();
  c->cluster_ = std::move(*started);
  return c;
}

}  // namespace farm
