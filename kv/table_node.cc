#include "kv/table_node.h"

#include <utility>

namespace farm::kv {

absl::StatusOr<std::unique_ptr<TableNode>> TableNode::Install(Host& host, TableOptions options) {
  absl::StatusOr<std::unique_ptr<TableHost>> table = TableHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<TableNode>(new TableNode(host, std::move(*table), "hopscotch",
                                                  OpenShippingClient<TableHost, TableClient>));
}

}  // namespace farm::kv
