#include "kv/local_kv_cluster.h"

#include "absl/time/clock.h"
#include "farm/api/log.h"
#include "kv/chained/chained_node.h"

namespace farm::kv {

void LocalKvCluster::ReportDoubleCompletion() {
  FARM_LOG(kError, "LocalKvCluster: an operation's continuation ran twice (a bug below kv)");
}

absl::StatusOr<std::unique_ptr<LocalKvCluster>> LocalKvCluster::Start(InProcessClusterOptions cluster,
                                                                      KvTableOptions table) {
  std::unique_ptr<LocalKvCluster> kv(new LocalKvCluster());
  LocalKvCluster* self = kv.get();
  auto before = cluster.before_start;
  cluster.before_start = [self, table, before](Host& n) -> absl::Status {
    if (before) {
      if (absl::Status s = before(n); !s.ok()) return s;
    }
    absl::StatusOr<std::unique_ptr<KvTable>> installed = InstallKvTable(n, table);
    if (!installed.ok()) return installed.status();
    self->tables_[n.self()] = std::move(*installed);
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<InProcessCluster>> started = InProcessCluster::Start(cluster);
  if (!started.ok()) return started.status();
  kv->cluster_ = std::move(*started);
  // Every machine's shards first: opening waits for all of them.
  for (auto& [id, table] : kv->tables_) {
    if (absl::Status s = table->CreateShards(); !s.ok()) return s;
  }
  for (auto& [id, table] : kv->tables_) {
    if (absl::Status s = table->Open(); !s.ok()) return s;
  }
  return kv;
}

absl::Status LocalKvCluster::WaitForExpansions(absl::Duration timeout) {
  auto expanding = [this] {
    for (auto& [id, table] : tables_) {
      auto* node = dynamic_cast<chained::ChainedNode*>(table.get());
      const chained::Expander* expander = node != nullptr ? node->host().expander() : nullptr;
      if (expander == nullptr) continue;
      for (uint32_t p = 0; p < expander->partitions(); ++p) {
        if (expander->expanding(p)) return true;
      }
    }
    return false;
  };
  const absl::Time deadline = absl::Now() + timeout;
  while (expanding()) {
    if (absl::Now() >= deadline) return absl::DeadlineExceededError("chained expansions still running");
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::OkStatus();
}

LocalKvCluster::~LocalKvCluster() {
  tables_.clear();  // drops the clients on their threads
  cluster_.reset();
}

}  // namespace farm::kv
