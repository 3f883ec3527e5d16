// GraphNode: the graph on one node process (a farm::Host): its id index (a kv hashtable
// with the graph's own identity, graph/index.h) and a GraphClient for every worker
// thread. The same code runs in farm_node (graph/resp/graph_service.h) and in
// in-process clusters (graph/local_graph_cluster.h).
//
//   auto graph = GraphNode::Install(host, options);   // before the node starts
//   ... every machine's node starts ...
//   graph->CreateShards();                            // on every machine, then
//   graph->Open();                                    // waits for every member's shards
//
// Threads: Install, CreateShards, Open and the destructor from a thread that is not one
// of the host's worker threads; client(t) on worker thread t only.
#ifndef FARM_GRAPH_GRAPH_NODE_H_
#define FARM_GRAPH_GRAPH_NODE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "graph/graph_client.h"
#include "graph/list_index.h"
#include "graph/node_ids.h"
#include "kv/table_node.h"

namespace farm::graph {

struct GraphOptions {
  // Index buckets this machine allocates (4 slots each with the default layout).
  uint64_t index_buckets_per_node = 1 << 16;
  // When a list gets its indexes, and their node size (list_index.h).
  ListIndexTuning list_index;
};

class GraphNode {
 public:
  static absl::StatusOr<std::unique_ptr<GraphNode>> Install(Host& host, GraphOptions options);
  ~GraphNode();
  GraphNode(const GraphNode&) = delete;
  GraphNode& operator=(const GraphNode&) = delete;

  absl::Status CreateShards() { return index_->CreateShards(); }
  // Opens the index, then makes the clients.
  absl::Status Open();

  bool open() const { return open_.load(std::memory_order_acquire); }
  GraphClient& client(size_t t) { return *clients_.at(t); }
  size_t threads() const { return clients_.size(); }
  NodeIdBlock& node_ids() { return ids_; }

 private:
  GraphNode(Host& host, std::unique_ptr<kv::TableNode> index, ListIndexTuning tuning)
      : host_(host), index_(std::move(index)), tuning_(tuning) {}
  // kGraphShipMsgId: runs the operation on the receiving thread's client (Unavailable
  // until the graph is open here).
  void OnShipped(Context& ctx, const Message& message);

  Host& host_;
  std::unique_ptr<kv::TableNode> index_;
  const ListIndexTuning tuning_;
  NodeIdBlock ids_;  // this machine's block of node ids (its clients share it)
  std::vector<std::unique_ptr<GraphClient>> clients_;  // written before open_ is set
  std::atomic<bool> open_{false};
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_GRAPH_NODE_H_
