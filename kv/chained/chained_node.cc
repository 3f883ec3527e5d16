#include "kv/chained/chained_node.h"

#include <utility>

namespace farm::kv::chained {

absl::StatusOr<std::unique_ptr<ChainedNode>> ChainedNode::Install(Host& host,
                                                                  ChainedOptions options,
                                                                  std::string layout) {
  absl::StatusOr<std::unique_ptr<ChainedHost>> table =
      ChainedHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<ChainedNode>(new ChainedNode(
      host, std::move(*table), std::move(layout), OpenShippingClient<ChainedHost, ChainedClient>));
}

}  // namespace farm::kv::chained
