#include "kv/node_start.h"

#include <atomic>
#include <utility>

#include "farm/api/log.h"
#include "farm/api/sync.h"
#include "kv/shard_catalog.h"

namespace farm::kv {

absl::Status RunInContext(Host& node, size_t t, const ContextOp& op) {
  auto result = std::make_shared<absl::Status>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  Context& ctx = node.context(t);
  ctx.Post([&ctx, op, result, done, finished]() mutable {
    op(ctx, [result, done, finished](absl::Status s) {
      if (finished->exchange(true)) {
        FARM_LOG(kError, "kv: a table operation's continuation ran twice (a bug below kv)");
        return;
      }
      *result = std::move(s);
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(ShardCatalog::kOpenTimeout + absl::Seconds(30))) {
    return absl::DeadlineExceededError("the kv table did not start in time");
  }
  return *result;
}

absl::Status CreateShardsOnNode(Host& node, const ContextOp& create) {
  if (node.compute_only()) return absl::OkStatus();  // holds none: the others' serve it
  // Right after a node starts its links to the other members may still be coming up:
  // allocations then fail Unavailable, and are tried again for a while.
  const absl::Time give_up = absl::Now() + ShardCatalog::kOpenTimeout;
  while (!node.ready()) {
    if (absl::Now() >= give_up) return absl::UnavailableError("the node did not link to the cluster in time");
    absl::SleepFor(absl::Milliseconds(10));
  }
  for (;;) {
    absl::Status s = RunInContext(node, 0, create);
    // Aborted too: a transaction conflicts, or its region is being re-replicated or handed
    // over after a configuration change (a join), as any application retries.
    const bool retry = s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded ||
                       s.code() == absl::StatusCode::kAborted;
    if (!retry || absl::Now() >= give_up) return s;
    FARM_LOG(kDebug, "kv: creating this node's shards (retrying): %s", s.ToString());
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace farm::kv
