#include "resp/output_flusher.h"

#include <algorithm>
#include <utility>

#include "resp/resp_connection.h"

namespace farm::resp {

std::shared_ptr<OutputFlusher> OutputFlusher::Create(Context* ctx) {
  return std::shared_ptr<OutputFlusher>(new OutputFlusher(ctx));
}

void OutputFlusher::Request(RespConnection* connection) {
  pending_.push_back(connection);
  if (scheduled_) return;
  scheduled_ = true;
  ctx_->Defer([self = shared_from_this()] { self->Run(); });
}

void OutputFlusher::Cancel(RespConnection* connection) {
  std::replace(pending_.begin(), pending_.end(), connection, static_cast<RespConnection*>(nullptr));
  std::replace(running_.begin(), running_.end(), connection, static_cast<RespConnection*>(nullptr));
}

void OutputFlusher::Run() {
  scheduled_ = false;
  running_.swap(pending_);  // requests made during the pass go to the next one
  for (size_t i = 0; i < running_.size(); ++i) {
    if (RespConnection* connection = running_[i]) connection->Flush();
  }
  running_.clear();
}

}  // namespace farm::resp
