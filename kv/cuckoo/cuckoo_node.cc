#include "kv/cuckoo/cuckoo_node.h"

#include <memory>
#include <utility>
#include <vector>

namespace farm::kv::cuckoo {

namespace {

// A thread's client: the opened map, then the thread's data slices
// (CuckooHost::ClaimSlices among the node's `threads` worker threads).
void OpenCuckooClient(CuckooHost& host, size_t threads, Context& ctx,
                      Done<absl::StatusOr<std::unique_ptr<CuckooClient>>> done) {
  const CuckooLimits limits = host.options().limits;
  host.Open(ctx, [&ctx, limits, threads, done = std::move(done)](
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
}

}  // namespace

absl::StatusOr<std::unique_ptr<CuckooNode>> CuckooNode::Install(Host& host, CuckooOptions options,
                                                                std::string layout) {
  absl::StatusOr<std::unique_ptr<CuckooHost>> table = CuckooHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  const size_t threads = host.thread_count();
  return std::unique_ptr<CuckooNode>(
      new CuckooNode(host, std::move(*table), std::move(layout),
                     [threads](CuckooHost& h, Context& ctx,
                               Done<absl::StatusOr<std::unique_ptr<CuckooClient>>> done) {
                       OpenCuckooClient(h, threads, ctx, std::move(done));
                     }));
}

}  // namespace farm::kv::cuckoo
