#include "tests/support/node_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "farm/fabric/socket_util.h"
#include "gtest/gtest.h"

namespace farm::testing {

absl::StatusOr<std::unique_ptr<NodeCluster>> NodeCluster::Start(
    const std::string& backend, int n, const std::string& name,
    const std::function<void(node::NodeOptions&)>& adjust) {
  std::unique_ptr<NodeCluster> c(new NodeCluster());
  c->dir_ = ::testing::TempDir() + name + "_" + backend + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(c->dir_);
  std::vector<std::string> entries;
  std::map<NodeId, std::string> listen;
  for (NodeId id = 1; id <= static_cast<NodeId>(n); ++id) {
    const std::string node_dir = absl::StrCat(c->dir_, "/node-", id);
    std::filesystem::create_directories(node_dir);
    std::string locator;
    if (backend == "shm") {
      locator = absl::StrCat("shm:", std::filesystem::absolute(node_dir + "/fabric.sock").string());
    } else {
      absl::StatusOr<UniqueFd> port = ListenTcp("127.0.0.1:0");
      if (!port.ok()) return port.status();
      listen[id] = *LocalTcpAddress(port->get());
      locator = absl::StrCat("tcp:", listen[id]);
    }
    entries.push_back(absl::StrCat(id, "=", locator));
  }
  const std::string members = absl::StrJoin(entries, ",");
  for (NodeId id = 1; id <= static_cast<NodeId>(n); ++id) {
    node::NodeOptions o;
    o.node_id = id;
    o.static_members = members;
    o.fabric = backend;
    if (backend == "tcp") o.listen = listen[id];
    o.data_dir = absl::StrCat(c->dir_, "/node-", id);
    o.cluster_secret = "0123456789abcdef0123456789abcdef";
    o.threads = 2;
    o.region_bytes = 32u << 20;
    o.capacity_bytes = 256u << 20;
    o.replication = 3;
    if (adjust) adjust(o);
    absl::StatusOr<std::unique_ptr<node::Node>> node = node::Node::Create(o);
    if (!node.ok()) return node.status();
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

NodeCluster::~NodeCluster() {
  for (auto& n : nodes_) n->Stop();
  nodes_.clear();
  std::filesystem::remove_all(dir_);
}

absl::StatusOr<FatPtr> AllocateOn(node::Node& n, uint64_t payload, Addr hint, size_t t) {
  return RunOn<absl::StatusOr<FatPtr>>(n, t, [payload, hint](alloc::ThreadAllocator& a, auto finish) {
    a.Allocate(payload, hint, [finish](absl::StatusOr<FatPtr> p) mutable { finish(std::move(p)); });
  });
}

absl::Status FreeOn(node::Node& n, FatPtr p, size_t t) {
  return RunOn<absl::Status>(n, t, [p](alloc::ThreadAllocator& a, auto finish) {
    a.Free(p, [finish](const absl::Status& s) mutable { finish(s); });
  });
}

}  // namespace farm::testing
