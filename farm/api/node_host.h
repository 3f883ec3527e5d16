// NodeHost: the Host of a node::Node — how the process that owns a node (farm_node's
// main, an in-process cluster, a tool) hands it to services. Not for applications: they
// get a Host& and never see a node.
#ifndef FARM_API_NODE_HOST_H_
#define FARM_API_NODE_HOST_H_

#include "farm/api/host.h"

namespace farm {

namespace node {
class Node;
}  // namespace node

class NodeHost final : public Host {
 public:
  // `node` outlives the host; install services before node->Start().
  explicit NodeHost(node::Node* node) : node_(node) {}

  NodeId self() const override;
  size_t thread_count() const override;
  Context& context(size_t thread) const override;
  bool ready() const override;
  bool compute_only() const override;
  absl::Status RegisterHandler(MsgId id, AppHandler handler, absl::string_view service) override;
  absl::Status AddConfigurationListener(ConfigurationListener listener) override;
  void AddCounters(const std::string& service, CounterSource source) override;
  void RemoveCounters(const std::string& service) override;
  std::optional<std::string> Metadata(const std::string& name) const override;
  void PutMetadata(Context& ctx, const std::string& name, std::string value,
                   absl::AnyInvocable<void(absl::Status)> done) override;

  node::Node& node() const { return *node_; }

 private:
  node::Node* const node_;
};

// msgRegisterHandler on a node the caller owns (tests and tools that drive nodes
// directly): the same as through its NodeHost.
absl::Status msgRegisterHandler(node::Node& node, MsgId id, AppHandler handler,
                                absl::string_view service = "an application");

}  // namespace farm

#endif  // FARM_API_NODE_HOST_H_
