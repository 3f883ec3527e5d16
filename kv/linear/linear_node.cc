#include "kv/linear/linear_node.h"

#include <utility>

namespace farm::kv::linear {

absl::StatusOr<std::unique_ptr<LinearNode>> LinearNode::Install(Host& host, LinearOptions options,
                                                                std::string layout) {
  absl::StatusOr<std::unique_ptr<LinearHost>> table = LinearHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<LinearNode>(new LinearNode(host, std::move(*table), std::move(layout),
                                                    OpenShippingClient<LinearHost, LinearClient>));
}

}  // namespace farm::kv::linear
