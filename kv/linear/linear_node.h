// LinearNode: the linear-probing table on one node process, the "linear" KvTable
// (kv/kv_table.h): its LinearHost (the table's handlers and this machine's slot groups)
// and a LinearClient for every worker thread.
//
// Threads: as KvTable's.
#ifndef FARM_KV_LINEAR_LINEAR_NODE_H_
#define FARM_KV_LINEAR_LINEAR_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "kv/kv_table.h"
#include "kv/layout_node.h"
#include "kv/linear/linear_client.h"
#include "kv/linear/linear_host.h"

namespace farm::kv::linear {

class LinearNode final : public LayoutNode<LinearHost, LinearClient> {
 public:
  // Registers the table's handlers; call before the node starts. `layout` is the name
  // it was made by (kv/table_layouts.h).
  static absl::StatusOr<std::unique_ptr<LinearNode>> Install(Host& host, LinearOptions options,
                                                             std::string layout);

 private:
  using LayoutNode::LayoutNode;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_NODE_H_
