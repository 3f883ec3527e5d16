#include "tests/support/node_cluster.h"

#include <unistd.h>

#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"

namespace farm::testing {

absl::StatusOr<std::unique_ptr<NodeCluster>> NodeCluster::Start(
    const std::string& backend, int n, const std::string& name,
    const std::function<void(node::NodeOptions&)>& adjust,
    const std::function<absl::Status(node::Node&)>& before_start) {
  node::LocalClusterOptions o;
  o.backend = backend;
  o.nodes = n;
  o.rdma_devices = farm::testing::TestVerbsDevices();
  o.dir = ::testing::TempDir() + name + "_" + backend + "_" + std::to_string(::getpid());
  o.adjust = adjust;
  o.before_start = before_start;
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = node::LocalCluster::Start(o);
  if (!c.ok()) return c.status();
  return std::unique_ptr<NodeCluster>(new NodeCluster(std::move(*c)));
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
