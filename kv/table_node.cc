#include "kv/table_node.h"

#include <atomic>
#include <utility>

#include "farm/api/log.h"
#include "farm/api/sync.h"

namespace farm::kv {
namespace {

// Runs op(context, finish) on the host's thread t and waits for finish(Status). A
// continuation that runs twice is a bug below kv: logged, the first result stands.
template <typename Op>
absl::Status RunInContext(Host& n, size_t t, Op op) {
  auto result = std::make_shared<absl::Status>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  Context& ctx = n.context(t);
  ctx.Post([&ctx, op = std::move(op), result, done, finished]() mutable {
    op(ctx, [result, done, finished](absl::Status s) {
      if (finished->exchange(true)) {
        FARM_LOG(kError, "kv: a table operation's continuation ran twice (a bug below kv)");
        return;
      }
      *result = std::move(s);
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(TableHost::kOpenTimeout + absl::Seconds(30))) {
    return absl::DeadlineExceededError("the kv table did not start in time");
  }
  return *result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TableNode>> TableNode::Install(Host& host, TableOptions options) {
  absl::StatusOr<std::unique_ptr<TableHost>> table = TableHost::Install(host, std::move(options));
  if (!table.ok()) return table.status();
  return std::unique_ptr<TableNode>(new TableNode(host, std::move(*table)));
}

TableNode::~TableNode() {
  for (size_t t = 0; t < clients_.size(); ++t) {
    RunOnThread(node_, t, [client = &clients_[t]](Context&) { client->reset(); });
  }
}

absl::Status TableNode::CreateShards() {
  if (node_.compute_only()) return absl::OkStatus();  // holds none: the others' serve it
  TableHost* host = host_.get();
  // Right after a node starts its links to the other members may still be coming up:
  // allocations then fail Unavailable, and are tried again for a while.
  const absl::Time give_up = absl::Now() + TableHost::kOpenTimeout;
  while (!node_.ready()) {
    if (absl::Now() >= give_up) return absl::UnavailableError("the node did not link to the cluster in time");
    absl::SleepFor(absl::Milliseconds(10));
  }
  for (;;) {
    absl::Status s = RunInContext(node_, 0, [host](Context& ctx, auto finish) {
      host->CreateShards(ctx, std::move(finish));
    });
    // Aborted too: a transaction conflicts, or its region is being re-replicated or handed
    // over after a configuration change (a join), as any application retries.
    const bool retry = s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded ||
                       s.code() == absl::StatusCode::kAborted;
    if (!retry || absl::Now() >= give_up) return s;
    FARM_LOG(kDebug, "kv: creating this node's shards (retrying): %s", s.ToString());
    absl::SleepFor(absl::Milliseconds(50));
  }
}

absl::Status TableNode::Open() {
  if (open()) return absl::FailedPreconditionError("the table is open already");
  std::vector<std::unique_ptr<TableClient>> clients(node_.thread_count());
  for (size_t t = 0; t < clients.size(); ++t) {
    TableHost* host = host_.get();
    const MsgId update_msg = host->options().identity.update_msg;
    std::unique_ptr<TableClient>* client = &clients[t];
    absl::Status opened = RunInContext(node_, t, [host, client, update_msg](Context& ctx, auto finish) {
      host->Open(ctx, [client, &ctx, update_msg, finish = std::move(finish)](
                          absl::StatusOr<std::shared_ptr<const ShardMap>> map) mutable {
        if (!map.ok()) return finish(map.status());
        *client = std::make_unique<TableClient>(ctx, *map, update_msg);
        finish(absl::OkStatus());
      });
    });
    if (!opened.ok()) {
      // Clients made so far are dropped on their own threads.
      for (size_t u = 0; u < t; ++u) RunOnThread(node_, u, [c = &clients[u]](Context&) { c->reset(); });
      return opened;
    }
  }
  clients_ = std::move(clients);
  return absl::OkStatus();
}

}  // namespace farm::kv
