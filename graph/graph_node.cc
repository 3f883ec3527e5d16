#include "graph/graph_node.h"

#include "graph/index.h"
#include "graph/messages.h"

namespace farm::graph {

absl::StatusOr<std::unique_ptr<GraphNode>> GraphNode::Install(Host& host, GraphOptions options) {
  kv::TableOptions table;
  table.identity = IndexIdentity();
  table.buckets_per_node = options.index_buckets_per_node;
  // Keys are 9 bytes and values 16 (vertex pointers) or a decimal counter: inline.
  table.layout.inline_key_bytes = 24;
  table.layout.inline_value_bytes = 24;
  absl::StatusOr<std::unique_ptr<kv::TableNode>> index = kv::TableNode::Install(host, table);
  if (!index.ok()) return index.status();
  std::unique_ptr<GraphNode> graph(new GraphNode(host, std::move(*index), options.list_index));
  GraphNode* self = graph.get();
  if (absl::Status s = msgRegisterHandler(
          host, kGraphShipMsgId, [self](Context& ctx, const Message& m) { self->OnShipped(ctx, m); }, "graph");
      !s.ok()) {
    return s;
  }
  return graph;
}

void GraphNode::OnShipped(Context& ctx, const Message& message) {
  absl::StatusOr<ShipRequest> request = DecodeShipRequest(message.payload);
  if (!request.ok()) {
    (void)msgReplyError(ctx, message, request.status());
    return;
  }
  if (!open()) {
    (void)msgReplyError(ctx, message, absl::UnavailableError("the graph is not open on this machine yet"));
    return;
  }
  const int64_t id1 = request->id1, type = request->type;
  clients_[ctx.thread_index()]->Execute(
      std::move(*request), [&ctx, message, id1, type](absl::StatusOr<ShipReply> reply) {
        if (!reply.ok()) {
          (void)msgReplyError(ctx, message, reply.status());
          return;
        }
        if (absl::Status sent = msgReply(ctx, message, EncodeShipReply(id1, type, *reply)); !sent.ok()) {
          // (a reply over the message size: the request asked for too much at once)
          (void)msgReplyError(ctx, message, sent);
        }
      });
}

GraphNode::~GraphNode() {
  open_.store(false, std::memory_order_release);
  for (size_t t = 0; t < clients_.size(); ++t) RunOnThread(host_, t, [c = &clients_[t]](Context&) { c->reset(); });
}

absl::Status GraphNode::Open() {
  if (open()) return absl::FailedPreconditionError("the graph is open already");
  if (absl::Status s = index_->Open(); !s.ok()) return s;
  std::vector<std::unique_ptr<GraphClient>> clients(host_.thread_count());
  for (size_t t = 0; t < clients.size(); ++t) {
    kv::TableClient* index = &index_->client(t);
    RunOnThread(host_, t, [index, ids = &ids_, c = &clients[t], tuning = tuning_](Context& ctx) {
      *c = std::make_unique<GraphClient>(ctx, *index, *ids, tuning);
    });
  }
  clients_ = std::move(clients);
  open_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

}  // namespace farm::graph
