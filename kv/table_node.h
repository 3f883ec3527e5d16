// TableNode: FaRM's hopscotch hashtable on one node process, the "hopscotch" KvTable
// (kv/kv_table.h): its TableHost (the table's handlers and this machine's shards) and a
// TableClient for every worker thread. The same code runs in a farm_node process
// (kv/resp/kv_service.h) and in in-process clusters (kv/local_kv_cluster.h), on the
// node's Host; the graph store keeps its id index in one (graph/graph_node.h).
//
//   auto table = TableNode::Install(host, options);   // before the node starts
//   ... every machine's node starts ...
//   table->CreateShards();                            // on every machine, then
//   table->Open();                                    // waits for every member's shards
//
// Threads: as KvTable's.
#ifndef FARM_KV_TABLE_NODE_H_
#define FARM_KV_TABLE_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "kv/kv_table.h"
#include "kv/layout_node.h"
#include "kv/table_client.h"
#include "kv/table_host.h"

namespace farm::kv {

class TableNode final : public LayoutNode<TableHost, TableClient> {
 public:
  // Registers the table's handlers; call before the node starts.
  static absl::StatusOr<std::unique_ptr<TableNode>> Install(Host& host, TableOptions options);

 private:
  using LayoutNode::LayoutNode;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_NODE_H_
