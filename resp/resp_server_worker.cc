#include "resp/resp_server_worker.h"

#include <utility>

namespace farm::resp {

RespServerWorker::RespServerWorker(Context* ctx, SessionFactory factory, SessionInfo info)
    : ctx_(ctx), factory_(std::move(factory)), info_(info) {}

RespServerWorker::~RespServerWorker() = default;

absl::Status RespServerWorker::Init() {
  absl::StatusOr<std::unique_ptr<SocketWatcher>> watcher = SocketWatcher::Create(ctx_);
  if (!watcher.ok()) return watcher.status();
  watcher_ = std::move(*watcher);
  flusher_ = OutputFlusher::Create(ctx_);
  return absl::OkStatus();
}

void RespServerWorker::Adopt(UniqueFd fd, uint64_t client_id) {
  RespCounters* counters = info_.counters;
  if (stopped_ || watcher_ == nullptr) {
    RespCounters::Sub(counters->connections_open);  // fd closes here
    return;
  }
  SessionInfo info = info_;
  info.client_id = client_id;
  std::shared_ptr<ProtocolSession> session = factory_(info);
  if (session == nullptr) {
    RespCounters::Sub(counters->connections_open);  // refused by the service; fd closes here
    return;
  }
  auto connection =
      std::make_unique<RespConnection>(std::move(fd), watcher_.get(), std::move(session),
                                       [this](RespConnection* c) { OnClosed(c); }, flusher_);
  RespConnection* raw = connection.get();
  if (!raw->Start().ok()) {
    raw->Close();  // counts the close
    return;
  }
  connections_->emplace(raw, std::move(connection));
}

void RespServerWorker::OnClosed(RespConnection* connection) {
  RespCounters::Sub(info_.counters->connections_open);
  if (stopped_) return;  // CloseAll destroys it
  // Not now: we may be inside the connection's own callback.
  ctx_->Defer([set = connections_, connection] { set->erase(connection); });
}

void RespServerWorker::CloseAll() {
  stopped_ = true;
  for (auto& [raw, connection] : *connections_) connection->Close();
  connections_->clear();  // sessions die here, on their thread
  watcher_.reset();
}

}  // namespace farm::resp
