#include "farm/node/local_cluster.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "farm/fabric/socket_util.h"

namespace farm::node {

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(const LocalClusterOptions& options) {
  // A tcp node binds the port a probe found free; another process may take it first
  // (tests run in parallel). Such a start is retried with new ports.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<std::unique_ptr<LocalCluster>> c = StartOnce(options);
    if (c.ok() || attempt == kAttempts || options.backend == "shm" ||
        !absl::StrContains(c.status().message(), std::strerror(EADDRINUSE))) {
      return c;
    }
  }
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::StartOnce(const LocalClusterOptions& options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("a local cluster needs a directory");
  if (options.backend != "shm" && options.backend != "tcp" && options.backend != "verbs") {
    return absl::InvalidArgumentError(
        absl::StrCat("backend ", options.backend, ": shm, tcp or verbs"));
  }
  std::unique_ptr<LocalCluster> c(new LocalCluster());
  c->dir_ = options.dir;
  c->keep_data_ = options.keep_data;
  if (!c->keep_data_) std::filesystem::remove_all(c->dir_);
  std::vector<std::string> entries;
  std::map<NodeId, std::string> listen;
  for (NodeId id = 1; id <= static_cast<NodeId>(options.nodes); ++id) {
    const std::string node_dir = absl::StrCat(c->dir_, "/node-", id);
    std::filesystem::create_directories(node_dir);
    std::string locator;
    if (options.backend == "shm") {
      locator = absl::StrCat("shm:", std::filesystem::absolute(node_dir + "/fabric.sock").string());
    } else {
      absl::StatusOr<UniqueFd> port = ListenTcp("127.0.0.1:0");
      if (!port.ok()) return port.status();
      listen[id] = *LocalTcpAddress(port->get());
      locator = absl::StrCat(options.backend, ":", listen[id]);
    }
    const bool compute = static_cast<int>(id) > options.nodes - options.compute_only_nodes;
    entries.push_back(absl::StrCat(id, "=", locator, compute ? ";compute" : ""));
  }
  const std::string members = absl::StrJoin(entries, ",");
  for (NodeId id = 1; id <= static_cast<NodeId>(options.nodes); ++id) {
    NodeOptions o;
    o.node_id = id;
    o.static_members = members;
    o.fabric = options.backend;
    if (options.backend != "shm") o.listen = listen[id];
    if (options.backend == "verbs" && !options.rdma_devices.empty()) {
      o.rdma_device = options.rdma_devices[(id - 1) % options.rdma_devices.size()];
    }
    o.data_dir = absl::StrCat(c->dir_, "/node-", id);
    o.log_sync = options.log_sync;
    o.cluster_secret = "0123456789abcdef0123456789abcdef";
    o.threads = options.threads;
    o.region_bytes = options.region_bytes;
    o.capacity_bytes = options.capacity_bytes;
    o.replication = options.replication;
    o.compute_only = static_cast<int>(id) > options.nodes - options.compute_only_nodes;
    if (options.adjust) options.adjust(o);
    absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(o);
    if (!node.ok()) return node.status();
    if (options.before_start) {
      if (absl::Status s = options.before_start(**node); !s.ok()) return s;
    }
    if (absl::Status s = (*node)->Start(); !s.ok()) return s;
    c->nodes_.push_back(std::move(*node));
  }
  auto linked = [&] {
    for (auto& a : c->nodes_) {
      for (auto& b : c->nodes_) {
        if (a != b && !a->messenger().IsConnected(b->options().node_id)) return false;
      }
    }
    return true;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!linked() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  if (!linked()) return absl::DeadlineExceededError("nodes did not link within 20 s");
  return c;
}

LocalCluster::~LocalCluster() {
  for (auto& n : nodes_) n->Stop();
  nodes_.clear();
  if (!keep_data_) std::filesystem::remove_all(dir_);
}

}  // namespace farm::node
