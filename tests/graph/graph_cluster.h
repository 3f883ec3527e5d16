// GraphCluster: the graph on an in-process cluster in a test directory
// (graph::LocalGraphCluster), with a blocking call for every GraphStore operation.
#ifndef FARM_TESTS_GRAPH_GRAPH_CLUSTER_H_
#define FARM_TESTS_GRAPH_GRAPH_CLUSTER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/local_graph_cluster.h"

namespace farm::graph::testing {

class GraphCluster {
 public:
  // Nodes 1..n with 2 threads, 64 MiB regions and replication r; an id index of
  // index_buckets buckets per node (4 ids each; past them, chains).
  static absl::StatusOr<std::unique_ptr<GraphCluster>> Start(const std::string& backend, int nodes,
                                                             const std::string& name, uint32_t replication = 3,
                                                             ListIndexTuning list_index = {},
                                                             uint32_t index_buckets = 1 << 12);

  LocalGraphCluster& local() { return *graph_; }
  GraphClient& client(NodeId id, size_t t = 0) { return graph_->client(id, t); }

  absl::StatusOr<int64_t> AddNode(NodeId on, Node node);
  absl::StatusOr<int64_t> AddNodes(NodeId on, std::vector<Node> nodes);
  absl::StatusOr<std::optional<Node>> GetNode(NodeId on, int64_t id, int32_t type);
  absl::StatusOr<bool> UpdateNode(NodeId on, Node node);
  absl::StatusOr<bool> DeleteNode(NodeId on, int64_t id, int32_t type);
  absl::Status ResetNodeIds(NodeId on, int64_t start);
  absl::StatusOr<bool> AddLink(NodeId on, Link link);
  absl::StatusOr<uint64_t> AddLinks(NodeId on, int64_t id1, int64_t type, std::vector<Link> links);
  absl::StatusOr<uint64_t> LoadLinkLists(NodeId on, std::vector<LinkList> lists, uint64_t load);
  absl::StatusOr<bool> DeleteLink(NodeId on, int64_t id1, int64_t type, int64_t id2, bool expunge);
  absl::StatusOr<std::vector<Link>> GetLinks(NodeId on, int64_t id1, int64_t type, std::vector<int64_t> id2s);
  absl::StatusOr<std::vector<Link>> GetLinkList(NodeId on, LinkRange range);
  absl::StatusOr<uint64_t> CountLinks(NodeId on, int64_t id1, int64_t type);
  absl::StatusOr<ListSnapshot> ReadList(NodeId on, int64_t id1, int64_t type);
  // Every client's figures, summed (call while no operation runs).
  ClientStats TotalStats();
  // Every machine's node id block's figures, summed (node_ids.h).
  NodeIdStats TotalNodeIdStats();

 private:
  explicit GraphCluster(std::unique_ptr<LocalGraphCluster> g) : graph_(std::move(g)) {}
  template <typename R, typename F>
  R Call(NodeId on, F f) {
    return graph_->Run<R>(on, 0, std::move(f));
  }
  std::unique_ptr<LocalGraphCluster> graph_;
};

}  // namespace farm::graph::testing

#endif  // FARM_TESTS_GRAPH_GRAPH_CLUSTER_H_
