// LocalGraphCluster: the graph on an in-process cluster (farm::InProcessCluster), for
// tests and benchmarks: a GraphNode on every node (as in a farm_node process), every
// node's index shards created, and a GraphClient for every worker thread of every node.
#ifndef FARM_GRAPH_LOCAL_GRAPH_CLUSTER_H_
#define FARM_GRAPH_LOCAL_GRAPH_CLUSTER_H_

#include <atomic>
#include <map>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/in_process_cluster.h"
#include "farm/api/sync.h"
#include "graph/graph_node.h"

namespace farm::graph {

class LocalGraphCluster {
 public:
  static absl::StatusOr<std::unique_ptr<LocalGraphCluster>> Start(InProcessClusterOptions cluster,
                                                                  GraphOptions graph);
  ~LocalGraphCluster();  // drops the clients on their threads, then stops the nodes

  InProcessCluster& cluster() { return *cluster_; }
  Host& host(NodeId id) { return cluster_->host(id); }
  int size() const { return cluster_->size(); }
  // Use a client on its own thread only (Run, or work posted to host(id).context(t)).
  GraphClient& client(NodeId id, size_t t = 0) { return graphs_.at(id)->client(t); }
  GraphNode& graph(NodeId id) { return *graphs_.at(id); }

  // Runs op(client, finish) on node `id`'s thread `t` and waits until finish(Result) is
  // called (DeadlineExceeded after `timeout`). Not from a worker thread.
  template <typename Result, typename Op>
  Result Run(NodeId id, size_t t, Op op, absl::Duration timeout = absl::Seconds(60)) {
    auto result = std::make_shared<Result>(absl::UnknownError("unset"));
    auto done = std::make_shared<Notification>();
    GraphClient* c = &client(id, t);
    host(id).context(t).Post([c, op = std::move(op), result, done]() mutable {
      op(*c, [result, done](Result r) {
        *result = std::move(r);
        done->Notify();
      });
    });
    if (!done->WaitForNotificationWithTimeout(timeout)) {
      return absl::DeadlineExceededError("the graph operation did not complete");
    }
    return std::move(*result);
  }

 private:
  LocalGraphCluster() = default;
  std::unique_ptr<InProcessCluster> cluster_;
  std::map<NodeId, std::unique_ptr<GraphNode>> graphs_;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_LOCAL_GRAPH_CLUSTER_H_
