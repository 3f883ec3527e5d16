#include "graph/local_graph_cluster.h"

namespace farm::graph {

absl::StatusOr<std::unique_ptr<LocalGraphCluster>> LocalGraphCluster::Start(InProcessClusterOptions cluster,
                                                                            GraphOptions graph) {
  std::unique_ptr<LocalGraphCluster> local(new LocalGraphCluster());
  LocalGraphCluster* self = local.get();
  auto before = cluster.before_start;
  cluster.before_start = [self, graph, before](Host& n) -> absl::Status {
    if (before) {
      if (absl::Status s = before(n); !s.ok()) return s;
    }
    absl::StatusOr<std::unique_ptr<GraphNode>> installed = GraphNode::Install(n, graph);
    if (!installed.ok()) return installed.status();
    self->graphs_[n.self()] = std::move(*installed);
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<InProcessCluster>> started = InProcessCluster::Start(cluster);
  if (!started.ok()) return started.status();
  local->cluster_ = std::move(*started);
  for (auto& [id, g] : local->graphs_) {
    if (absl::Status s = g->CreateShards(); !s.ok()) return s;
  }
  for (auto& [id, g] : local->graphs_) {
    if (absl::Status s = g->Open(); !s.ok()) return s;
  }
  return local;
}

LocalGraphCluster::~LocalGraphCluster() {
  graphs_.clear();
  cluster_.reset();
}

}  // namespace farm::graph
