#include "graph/graph_node.h"

#include "graph/index.h"

namespace farm::graph {

absl::StatusOr<std::unique_ptr<GraphNode>> GraphNode::Install(Host& host, GraphOptions options) {
  kv::TableOptions table;
  table.identity = IndexIdentity();
  table.buckets_per_node = options.index_buckets_per_node;
  // Keys are 9 bytes and values 16 (vertex pointers) or a decimal counter: inline.
  table.layout.inline_key_bytes = 24;
  table.layout.inline_value_bytes = 24;
  absl::StatusOr<std::unique_ptr<kv::TableNode>> index = kv::TableNode::Install(host, table);
  if (!index.ok()) return index.status();
  return std::unique_ptr<GraphNode>(new GraphNode(host, std::move(*index)));
}

GraphNode::~GraphNode() {
  for (size_t t = 0; t < clients_.size(); ++t) RunOnThread(host_, t, [c = &clients_[t]](Context&) { c->reset(); });
}

absl::Status GraphNode::Open() {
  if (open()) return absl::FailedPreconditionError("the graph is open already");
  if (absl::Status s = index_->Open(); !s.ok()) return s;
  std::vector<std::unique_ptr<GraphClient>> clients(host_.thread_count());
  for (size_t t = 0; t < clients.size(); ++t) {
    kv::TableClient* index = &index_->client(t);
    RunOnThread(host_, t, [index, c = &clients[t]](Context& ctx) {
      *c = std::make_unique<GraphClient>(ctx, index->shared_map(), index->reader());
    });
  }
  clients_ = std::move(clients);
  return absl::OkStatus();
}

}  // namespace farm::graph
