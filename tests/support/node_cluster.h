// A cluster of Nodes in one process for tests (node::LocalCluster in a test temporary
// directory); and helpers that run allocator operations on a
// node's worker thread and wait for them.
#ifndef FARM_TESTS_SUPPORT_NODE_CLUSTER_H_
#define FARM_TESTS_SUPPORT_NODE_CLUSTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "farm/node/local_cluster.h"
#include "farm/api/node_host.h"
#include "farm/node/node.h"
#include "tx/transaction.h"

namespace farm::testing {

class NodeCluster {
 public:
  // Starts nodes 1..n on `backend` ("shm" or "tcp") under a fresh directory named after
  // `name`, with r = 3, 2 threads, 32 MiB regions; `adjust` may change each node's
  // options and `before_start` may register handlers on each node before it starts.
  // Returns once every node is linked to every other (20 s at most).
  static absl::StatusOr<std::unique_ptr<NodeCluster>> Start(
      const std::string& backend, int n, const std::string& name,
      const std::function<void(node::NodeOptions&)>& adjust = nullptr,
      const std::function<absl::Status(node::Node&)>& before_start = nullptr);

  node::Node& node(NodeId id) { return cluster_->node(id); }
  int size() const { return cluster_->size(); }

 private:
  explicit NodeCluster(std::unique_ptr<node::LocalCluster> cluster) : cluster_(std::move(cluster)) {}
  std::unique_ptr<node::LocalCluster> cluster_;  // stops the nodes, removes the directory
};

// Runs `op(thread allocator, finish)` on `n`'s worker thread `t` and waits (20 s at
// most) until `finish(Result)` is called, on any thread.
template <typename Result, typename Op>
Result RunOn(node::Node& n, size_t t, Op op) {
  auto result = std::make_shared<Result>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  n.loop(t).Post([&n, t, op, result, done]() mutable {
    op(*n.alloc_service().thread(t), [result, done](Result r) {
      *result = std::move(r);
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(20))) {
    return absl::DeadlineExceededError("no completion in 20 s");
  }
  return *result;
}

// Runs `op(context, finish)` on `n`'s worker thread `t` with that thread's transaction
// Context (farm/api/farm.h) and waits (20 s at most) until `finish(Result)` is called.
template <typename Result, typename Op>
Result RunInContext(node::Node& n, Op op, size_t t = 0) {
  auto result = std::make_shared<Result>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  n.loop(t).Post([&n, t, op, result, done]() mutable {
    op(n.context(t), [result, done](Result r) {
      *result = std::move(r);
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(20))) {
    return absl::DeadlineExceededError("no completion in 20 s");
  }
  return *result;
}

absl::StatusOr<FatPtr> AllocateOn(node::Node& n, uint64_t payload, Addr hint = {}, size_t t = 0);
absl::Status FreeOn(node::Node& n, FatPtr p, size_t t = 0);

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_NODE_CLUSTER_H_
