#include "farm/api/node_host.h"

#include <utility>

#include "farm/node/node.h"

namespace farm {

NodeId NodeHost::self() const { return node_->options().node_id; }

size_t NodeHost::thread_count() const { return node_->options().threads; }  // known before Start

Context& NodeHost::context(size_t thread) const { return node_->context(thread); }

bool NodeHost::ready() const { return node_->linked(); }

bool NodeHost::compute_only() const { return node_->options().compute_only; }

absl::Status NodeHost::RegisterHandler(MsgId id, AppHandler handler, absl::string_view service) {
  node::Node* n = node_;
  auto on_message = [n, handler = std::move(handler)](MsgThread& thread, const Message& m) {
    handler(n->context(thread.index()), m);
  };
  return n->RegisterHandler(id, std::move(on_message), service);
}

absl::Status NodeHost::AddConfigurationListener(ConfigurationListener listener) {
  return node_->AddConfigurationListener(std::move(listener));
}

void NodeHost::AddCounters(const std::string& service, CounterSource source) {
  node_->AddServiceCounters(service, std::move(source));
}

absl::Status msgRegisterHandler(node::Node& node, MsgId id, AppHandler handler, absl::string_view service) {
  return NodeHost(&node).RegisterHandler(id, std::move(handler), service);
}

void NodeHost::RemoveCounters(const std::string& service) { node_->RemoveServiceCounters(service); }

std::optional<std::string> NodeHost::Metadata(const std::string& name) const { return node_->Metadata(name); }

void NodeHost::PutMetadata(Context& ctx, const std::string& name, std::string value,
                           absl::AnyInvocable<void(absl::Status)> done) {
  node_->PutMetadata(name, std::move(value), [&ctx, done = std::move(done)](absl::Status s) mutable {
    ctx.Post([s = std::move(s), done = std::move(done)]() mutable { done(std::move(s)); });
  });
}

}  // namespace farm
