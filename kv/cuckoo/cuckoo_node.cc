#include "kv/cuckoo/cuckoo_node.h"

#include <utility>

#include "kv/node_start.h"

namespace farm::kv::cuckoo {

absl::StatusOr<std::unique_ptr<CuckooNode>> CuckooNode::Install(Host& host, CuckooOptions options,
                                                                std::string layout) {
  absl::StatusOr<std::unique_ptr<CuckooHost>> table = CuckooHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<CuckooNode>(new CuckooNode(host, std::move(*table), std::move(layout)));
}

CuckooNode::~CuckooNode() { DropClientsOnNode(node_, clients_); }

absl::Status CuckooNode::CreateShards() {
  CuckooHost* host = host_.get();
  return CreateShardsOnNode(node_, [host](Context& ctx, Done<absl::Status> finish) {
    host->CreateShards(ctx, std::move(finish));
  });
}

absl::Status CuckooNode::Open() {
  if (open()) return absl::FailedPreconditionError("the table is open already");
  CuckooHost* host = host_.get();
  const CuckooLimits limits = host->options().limits;
  const size_t threads = node_.thread_count();
  return OpenClientsOnNode<CuckooClient>(
      node_,
      [host, limits, threads](Context& ctx,
                              Done<absl::StatusOr<std::unique_ptr<CuckooClient>>> done) {
        host->Open(ctx, [&ctx, limits, threads, done = std::move(done)](
                            absl::StatusOr<std::shared_ptr<const CuckooMap>> map) mutable {
          if (!map.ok()) return done(map.status());
          std::shared_ptr<const CuckooMap> m = *map;
          Spawn(CuckooHost::ClaimSlices(ctx, m, threads),
                [&ctx, m, limits,
                 done = std::move(done)](absl::StatusOr<std::vector<SliceRef>> slices) mutable {
                  if (!slices.ok()) return done(slices.status());
                  done(std::make_unique<CuckooClient>(ctx, m, *slices, limits));
                });
        });
      },
      clients_);
}

}  // namespace farm::kv::cuckoo
