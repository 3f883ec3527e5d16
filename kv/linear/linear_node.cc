#include "kv/linear/linear_node.h"

#include <utility>

#include "kv/node_start.h"

namespace farm::kv::linear {

absl::StatusOr<std::unique_ptr<LinearNode>> LinearNode::Install(Host& host, LinearOptions options,
                                                                std::string layout) {
  absl::StatusOr<std::unique_ptr<LinearHost>> table = LinearHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<LinearNode>(new LinearNode(host, std::move(*table), std::move(layout)));
}

LinearNode::~LinearNode() { DropClientsOnNode(node_, clients_); }

absl::Status LinearNode::CreateShards() {
  LinearHost* host = host_.get();
  return CreateShardsOnNode(node_, [host](Context& ctx, Done<absl::Status> finish) {
    host->CreateShards(ctx, std::move(finish));
  });
}

absl::Status LinearNode::Open() {
  if (open()) return absl::FailedPreconditionError("the table is open already");
  LinearHost* host = host_.get();
  const MsgId update_msg = host->options().identity.update_msg;
  return OpenClientsOnNode<LinearClient>(
      node_,
      [host, update_msg](Context& ctx, Done<absl::StatusOr<std::unique_ptr<LinearClient>>> done) {
        host->Open(ctx, [&ctx, update_msg, done = std::move(done)](
                            absl::StatusOr<std::shared_ptr<const LinearTable>> table) mutable {
          if (!table.ok()) return done(table.status());
          done(std::make_unique<LinearClient>(ctx, *table, update_msg));
        });
      },
      clients_);
}

}  // namespace farm::kv::linear
