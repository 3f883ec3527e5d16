#include "kv/chained/chained_node.h"

#include <utility>

#include "kv/node_start.h"

namespace farm::kv::chained {

absl::StatusOr<std::unique_ptr<ChainedNode>> ChainedNode::Install(Host& host, ChainedOptions options,
                                                                  std::string layout) {
  absl::StatusOr<std::unique_ptr<ChainedHost>> table = ChainedHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<ChainedNode>(new ChainedNode(host, std::move(*table), std::move(layout)));
}

ChainedNode::~ChainedNode() { DropClientsOnNode(node_, clients_); }

absl::Status ChainedNode::CreateShards() {
  ChainedHost* host = host_.get();
  return CreateShardsOnNode(node_, [host](Context& ctx, Done<absl::Status> finish) {
    host->CreateShards(ctx, std::move(finish));
  });
}

absl::Status ChainedNode::Open() {
  if (open()) return absl::FailedPreconditionError("the table is open already");
  ChainedHost* host = host_.get();
  const MsgId update_msg = host->options().identity.update_msg;
  return OpenClientsOnNode<ChainedClient>(
      node_,
      [host, update_msg](Context& ctx, Done<absl::StatusOr<std::unique_ptr<ChainedClient>>> done) {
        host->Open(ctx, [&ctx, update_msg, done = std::move(done)](absl::StatusOr<ChainedTable> table) mutable {
          if (!table.ok()) return done(table.status());
          done(std::make_unique<ChainedClient>(ctx, *table, update_msg));
        });
      },
      clients_);
}

}  // namespace farm::kv::chained
