// ChainedNode: the chained table on one node process, the "chained" KvTable
// (kv/kv_table.h): its ChainedHost (the table's handlers, this machine's partitions
// and their expansions) and a ChainedClient for every worker thread.
//
// Threads: as KvTable's.
#ifndef FARM_KV_CHAINED_CHAINED_NODE_H_
#define FARM_KV_CHAINED_CHAINED_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "kv/chained/chained_client.h"
#include "kv/chained/chained_host.h"
#include "kv/kv_table.h"
#include "kv/layout_node.h"

namespace farm::kv::chained {

class ChainedNode final : public LayoutNode<ChainedHost, ChainedClient> {
 public:
  // Registers the table's handlers; call before the node starts. `layout` is the name
  // it was made by (kv/table_layouts.h).
  static absl::StatusOr<std::unique_ptr<ChainedNode>> Install(Host& host, ChainedOptions options,
                                                              std::string layout);

 private:
  using LayoutNode::LayoutNode;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_NODE_H_
