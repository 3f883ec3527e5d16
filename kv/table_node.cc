#include "kv/table_node.h"

#include <utility>

#include "kv/node_start.h"

namespace farm::kv {

absl::StatusOr<std::unique_ptr<TableNode>> TableNode::Install(Host& host, TableOptions options) {
  absl::StatusOr<std::unique_ptr<TableHost>> table = TableHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<TableNode>(new TableNode(host, std::move(*table)));
}

TableNode::~TableNode() { DropClientsOnNode(node_, clients_); }

absl::Status TableNode::CreateShards() {
  TableHost* host = host_.get();
  return CreateShardsOnNode(node_, [host](Context& ctx, Done<absl::Status> finish) {
    host->CreateShards(ctx, std::move(finish));
  });
}

absl::Status TableNode::Open() {
  if (open()) return absl::FailedPreconditionError("the table is open already");
  TableHost* host = host_.get();
  const MsgId update_msg = host->options().identity.update_msg;
  return OpenClientsOnNode<TableClient>(
      node_,
      [host, update_msg](Context& ctx, Done<absl::StatusOr<std::unique_ptr<TableClient>>> done) {
        host->Open(ctx, [&ctx, update_msg, done = std::move(done)](
                            absl::StatusOr<std::shared_ptr<const ShardMap>> map) mutable {
          if (!map.ok()) return done(map.status());
          done(std::make_unique<TableClient>(ctx, *map, update_msg));
        });
      },
      clients_);
}

}  // namespace farm::kv
