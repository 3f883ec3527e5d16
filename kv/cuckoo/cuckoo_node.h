// CuckooNode: the cuckoo (Nessie) table on one node process, the "cuckoo" KvTable
// (kv/kv_table.h): its CuckooHost (this machine's index and data tables) and a
// CuckooClient for every worker thread.
//
// Threads: as KvTable's.
#ifndef FARM_KV_CUCKOO_CUCKOO_NODE_H_
#define FARM_KV_CUCKOO_CUCKOO_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "kv/cuckoo/cuckoo_client.h"
#include "kv/cuckoo/cuckoo_host.h"
#include "kv/kv_table.h"
#include "kv/layout_node.h"

namespace farm::kv::cuckoo {

class CuckooNode final : public LayoutNode<CuckooHost, CuckooClient> {
 public:
  // Registers the table's handlers; call before the node starts. `layout` is the name
  // it was made by (kv/table_layouts.h).
  static absl::StatusOr<std::unique_ptr<CuckooNode>> Install(Host& host, CuckooOptions options,
                                                             std::string layout);

 private:
  using LayoutNode::LayoutNode;
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_CUCKOO_NODE_H_
