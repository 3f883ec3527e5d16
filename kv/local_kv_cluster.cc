#include "kv/local_kv_cluster.h"

#include "farm/api/log.h"

namespace farm::kv {
namespace {

// Runs op(context, finish) on node's thread t and waits for finish(Status).
template <typename Op>
absl::Status RunInContext(node::Node& n, size_t t, Op op) {
  auto result = std::make_shared<absl::Status>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  n.loop(t).Post([&n, t, op = std::move(op), result, done, finished]() mutable {
    op(n.context(t), [result, done, finished](absl::Status s) {
      if (finished->exchange(true)) return LocalKvCluster::ReportDoubleCompletion();
      *result = std::move(s);
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(TableHost::kOpenTimeout + absl::Seconds(30))) {
    return absl::DeadlineExceededError("the kv store did not start in time");
  }
  return *result;
}

}  // namespace

void LocalKvCluster::ReportDoubleCompletion() {
  FARM_LOG(kError, "LocalKvCluster: an operation's continuation ran twice (a bug below kv)");
}

absl::StatusOr<std::unique_ptr<LocalKvCluster>> LocalKvCluster::Start(node::LocalClusterOptions cluster,
                                                                      TableOptions table) {
  std::unique_ptr<LocalKvCluster> kv(new LocalKvCluster());
  LocalKvCluster* self = kv.get();
  auto before = cluster.before_start;
  cluster.before_start = [self, table, before](node::Node& n) -> absl::Status {
    if (before) {
      if (absl::Status s = before(n); !s.ok()) return s;
    }
    absl::StatusOr<std::unique_ptr<TableHost>> host = TableHost::Install(n, table);
    if (!host.ok()) return host.status();
    self->hosts_[n.options().node_id] = std::move(*host);
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> started = node::LocalCluster::Start(cluster);
  if (!started.ok()) return started.status();
  kv->cluster_ = std::move(*started);
  for (auto& [id, host] : kv->hosts_) {
    TableHost* h = host.get();
    absl::Status created = RunInContext(kv->node(id), 0, [h](Context& ctx, auto finish) {
      h->CreateShards(ctx, std::move(finish));
    });
    if (!created.ok()) return created;
  }
  for (auto& [id, host] : kv->hosts_) {
    TableHost* h = host.get();
    for (size_t t = 0; t < kv->node(id).thread_count(); ++t) {
      absl::Status opened = RunInContext(kv->node(id), t, [self, h, id, t](Context& ctx, auto finish) {
        h->Open(ctx, [self, id, t, &ctx, finish = std::move(finish)](
                         absl::StatusOr<std::shared_ptr<const ShardMap>> map) mutable {
          if (!map.ok()) return finish(map.status());
          self->clients_[{id, t}] = std::make_unique<TableClient>(ctx, *map);
          finish(absl::OkStatus());
        });
      });
      if (!opened.ok()) return opened;
    }
  }
  return kv;
}

LocalKvCluster::~LocalKvCluster() {
  for (auto& [where, client] : clients_) {
    RunInLoop(node(where.first).loop(where.second), [&client = client] { client.reset(); });
  }
  cluster_.reset();
}

}  // namespace farm::kv
