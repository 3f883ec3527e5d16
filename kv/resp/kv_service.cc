#include "kv/resp/kv_service.h"

#include <utility>

#include "farm/api/log.h"
#include "resp/redis_errors.h"

namespace farm::kv {

absl::StatusOr<std::unique_ptr<KvService>> KvService::Create(Host& host, KvServiceOptions options) {
  absl::StatusOr<std::unique_ptr<KvTable>> table = InstallKvTable(host, KvTableOptions{options.layout, options.table});
  if (!table.ok()) return table.status();
  return std::unique_ptr<KvService>(new KvService(host, std::move(options), std::move(*table)));
}

KvService::~KvService() { Stop(); }

absl::Status KvService::Start() {
  if (table_ == nullptr) return absl::FailedPreconditionError("the kv service was stopped");
  if (absl::Status s = table_->CreateShards(); !s.ok()) return s;
  if (absl::Status s = table_->Open(); !s.ok()) return s;
  std::vector<Context*> threads;
  for (size_t t = 0; t < host_.thread_count(); ++t) {
    threads.push_back(&host_.context(t));
    stores_.push_back(std::make_unique<TableStore>(table_->client(t)));
  }
  absl::StatusOr<std::unique_ptr<::farm::resp::RespServer>> server = resp::StartKvRespServer(
      threads, [this](size_t t) -> Store* { return stores_[t].get(); }, options_.resp);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  // Tests and deploy/ read the port as this line's last word.
  FARM_LOG(kInfo, "node %u: kv: table layout %s", host_.self(), table_->layout());
  FARM_LOG(kInfo, "node %u: kv: RESP on %s port %u", host_.self(), options_.resp.listen, server_->port());
  return absl::OkStatus();
}

std::vector<std::pair<std::string, uint64_t>> KvService::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> counters = {
      {"configuration_epoch", epoch_.load(std::memory_order_relaxed)},
      {"configuration_members", members_.load(std::memory_order_relaxed)}};
  if (server_ == nullptr) return counters;
  for (auto& c : ::farm::resp::ServerCounters(*server_)) counters.push_back(std::move(c));
  return counters;
}

void KvService::OnConfiguration(uint64_t epoch, const std::vector<NodeId>& members) {
  epoch_.store(epoch, std::memory_order_relaxed);
  members_.store(members.size(), std::memory_order_relaxed);
  // The table keeps the shards it was opened with (no re-sharding, kv/README.md): keys
  // whose shards were on a machine that left fail until failover brings them back.
  FARM_LOG(kInfo, "node %u: kv: configuration %d with %d members", host_.self(), epoch, members.size());
}

void KvService::Stop() {
  if (server_ != nullptr) server_->Stop();
  server_.reset();
  // Stores are used by the server's sessions only; the clients go on their threads.
  stores_.clear();
  table_.reset();
}

}  // namespace farm::kv
