#include "kv/resp/kv_service.h"

#include <utility>

namespace farm::kv {

absl::StatusOr<std::unique_ptr<KvService>> KvService::Install(node::Node& node,
                                                              KvServiceOptions options) {
  absl::StatusOr<std::unique_ptr<TableNode>> table = TableNode::Install(node, options.table);
  if (!table.ok()) return table.status();
  return std::unique_ptr<KvService>(new KvService(node, std::move(options), std::move(*table)));
}

KvService::~KvService() { Stop(); }

absl::Status KvService::Start() {
  if (table_ == nullptr) return absl::FailedPreconditionError("the kv service was stopped");
  if (absl::Status s = table_->CreateShards(); !s.ok()) return s;
  if (absl::Status s = table_->Open(); !s.ok()) return s;
  std::vector<EventLoop*> loops;
  for (size_t t = 0; t < node_.thread_count(); ++t) {
    loops.push_back(&node_.loop(t));
    stores_.push_back(std::make_unique<TableStore>(table_->client(t)));
  }
  absl::StatusOr<std::unique_ptr<resp::RespServer>> server = resp::RespServer::Start(
      loops, [this](size_t t) -> Store* { return stores_[t].get(); }, options_.resp);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  return absl::OkStatus();
}

std::vector<std::pair<std::string, uint64_t>> KvService::Counters() const {
  if (server_ == nullptr) return {};
  const resp::RespStats s = server_->stats();
  return {{"resp_connections_open", s.connections_open},
          {"resp_connections_accepted", s.connections_accepted},
          {"resp_connections_rejected", s.connections_rejected},
          {"resp_commands", s.commands},
          {"resp_error_replies", s.error_replies},
          {"resp_protocol_errors", s.protocol_errors}};
}

void KvService::Stop() {
  if (server_ != nullptr) server_->Stop();
  server_.reset();
  // Stores are used by the server's sessions only; the clients go on their threads.
  stores_.clear();
  table_.reset();
}

}  // namespace farm::kv
