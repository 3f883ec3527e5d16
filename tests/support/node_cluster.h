// A cluster of Nodes in one process for tests: static membership, one fabric backend,
// every node linked to every other; and helpers that run allocator operations on a
// node's worker thread and wait for them.
#ifndef FARM_TESTS_SUPPORT_NODE_CLUSTER_H_
#define FARM_TESTS_SUPPORT_NODE_CLUSTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "farm/node/node.h"

namespace farm::testing {

class NodeCluster {
 public:
  // Starts nodes 1..n on `backend` ("shm" or "tcp") under a fresh directory named after
  // `name`, with r = 3, 2 threads, 32 MiB regions; `adjust` may change each node's
  // options. Returns once every node is linked to every other (20 s at most).
  static absl::StatusOr<std::unique_ptr<NodeCluster>> Start(
      const std::string& backend, int n, const std::string& name,
      const std::function<void(node::NodeOptions&)>& adjust = nullptr);
  ~NodeCluster();  // stops the nodes, removes the directory

  node::Node& node(NodeId id) { return *nodes_[id - 1]; }
  int size() const { return static_cast<int>(nodes_.size()); }

 private:
  NodeCluster() = default;
  std::string dir_;
  std::vector<std::unique_ptr<node::Node>> nodes_;
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
