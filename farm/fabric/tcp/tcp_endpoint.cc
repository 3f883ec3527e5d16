#include "farm/fabric/tcp/tcp_endpoint.h"

#include <sys/epoll.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/fabric/socket_util.h"
#include "farm/fabric/tcp/tcp_wire.h"
#include "farm/fabric/validate.h"

namespace farm {

using tcp_wire::OpRequest;
using tcp_wire::OpResponse;

absl::StatusOr<std::unique_ptr<TcpEndpoint>> TcpEndpoint::Create(const TcpEndpointConfig& config,
                                                                 UniqueFd socket,
                                                                 SocketCompletionQueue* cq,
                                                                 uint64_t context) {
  std::unique_ptr<TcpEndpoint> ep(new TcpEndpoint(config, std::move(socket), cq, context));
  if (absl::Status s = cq->Watch(ep->socket_.get(), ep.get(), /*want_write=*/false); !s.ok()) {
    return s;
  }
  return ep;
}

TcpEndpoint::TcpEndpoint(const TcpEndpointConfig& config, UniqueFd socket,
                         SocketCompletionQueue* cq, uint64_t context)
    : config_(config),
      socket_(std::move(socket)),
      cq_(cq),
      context_(context),
      pending_(config.max_outstanding) {}

TcpEndpoint::~TcpEndpoint() {
  cq_->ForgetHeldBack(this);
  cq_->Unwatch(socket_.get());
  if (count_ > 0) cq_->AddAwaiting(-1);
  // Outstanding claims are released so the queue's accounting stays exact.
  while (count_ > 0) {
    PopFront();
    cq_->Complete(nullptr);
  }
}

void TcpEndpoint::Enqueue(const Pending& p) {
  if (count_ == 0) cq_->AddAwaiting(1);
  pending_[(head_ + count_) % pending_.size()] = p;
  ++count_;
}

TcpEndpoint::Pending TcpEndpoint::PopFront() {
  Pending p = pending_[head_];
  head_ = (head_ + 1) % pending_.size();
  if (--count_ == 0) cq_->AddAwaiting(-1);
  return p;
}

void TcpEndpoint::Finish(const Pending& p, CompletionStatus status, bool torn) {
  if (p.signaled || status != CompletionStatus::kSuccess) {
    Completion c;
    c.wr_id = p.wr_id;
    c.opcode = p.opcode;
    c.status = status;
    c.torn = torn;
    c.byte_len = status == CompletionStatus::kSuccess ? p.length : 0;
    cq_->Complete(&c);
  } else {
    cq_->Complete(nullptr);
  }
}

void TcpEndpoint::CompleteUnsent() {
  while (count_ > 0 && !pending_[head_].sent) {
    const Pending p = PopFront();
    Finish(p, p.local_status, false);
  }
}

absl::Status TcpEndpoint::Post(const WorkRequest& wr) {
  absl::Status status = Queue(wr);
  if (status.ok() && !wr.signaled && wr.opcode == Opcode::kWrite && wr.notify == kNoDoorbell) {
    cq_->HoldBack(this);  // the next request or the next Poll sends it
    return status;
  }
  Flush();
  return status;
}

absl::Status TcpEndpoint::PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted) {
  absl::Status status;
  for (*posted = 0; *posted < wrs.size(); ++*posted) {
    if (status = Queue(wrs[*posted]); !status.ok()) break;
  }
  Flush();  // the whole batch in one write
  return status;
}

absl::Status TcpEndpoint::Queue(const WorkRequest& wr) {
  if (!status_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("endpoint failed: ", status_.message()));
  }
  if (absl::Status s = ValidateWorkRequest(wr, config_.max_op_bytes); !s.ok()) return s;
  if (count_ >= pending_.size()) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%u requests already in flight on this endpoint", count_));
  }
  if (!cq_->Claim()) {
    return absl::ResourceExhaustedError("completion queue full: poll it before posting more");
  }
  Pending p{wr.wr_id, wr.opcode, wr.signaled, true, CompletionStatus::kSuccess, wr.local,
            wr.length};
  if (!config_.local_regions->CheckLocal(wr.lkey, wr.local, wr.length)) {
    p.sent = false;
    p.local_status = CompletionStatus::kLocalProtectionError;
    Enqueue(p);
    CompleteUnsent();
    return absl::OkStatus();
  }
  OpRequest req{};
  req.kind = tcp_wire::kOpRequest;
  req.opcode = static_cast<uint8_t>(wr.opcode);
  req.length = wr.length;
  req.region = wr.remote->region;
  req.notify = wr.notify;
  req.offset = wr.remote_offset;
  req.rkey = wr.remote->rkey;
  req.compare_add = wr.compare_add;
  req.swap = wr.swap;
  out_.Append(&req, sizeof(req));
  if (wr.opcode == Opcode::kWrite) out_.Append(wr.local, wr.length);
  Enqueue(p);
  return absl::OkStatus();
}

void TcpEndpoint::Flush() {
  if (!status_.ok()) return;
  if (absl::Status s = WriteAvailable(socket_.get(), out_); !s.ok()) {
    Fail(s);
    return;
  }
  const bool want_write = !out_.empty();
  if (want_write != want_write_) {
    want_write_ = want_write;
    (void)cq_->Rewatch(socket_.get(), this, want_write);
  }
}

void TcpEndpoint::OnSocketReady(uint32_t events) {
  if (!status_.ok()) return;
  if (events & EPOLLOUT) Flush();
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    absl::StatusOr<size_t> read = ReadAvailable(socket_.get(), in_);
    ParseResponses();
    if (!read.ok()) Fail(read.status());
  }
}

void TcpEndpoint::ParseResponses() {
  while (status_.ok() && in_.size() >= sizeof(OpResponse)) {
    OpResponse resp;
    std::memcpy(&resp, in_.data(), sizeof(resp));
    if (resp.kind != tcp_wire::kOpResponse || count_ == 0 || !pending_[head_].sent ||
        resp.opcode != static_cast<uint8_t>(pending_[head_].opcode) ||
        resp.status > static_cast<uint8_t>(CompletionStatus::kFlushed)) {
      Fail(absl::DataLossError("tcp peer sent a response that matches no request"));
      return;
    }
    const auto status = static_cast<CompletionStatus>(resp.status);
    const Pending& p = pending_[head_];
    const bool read_ok = p.opcode == Opcode::kRead && status == CompletionStatus::kSuccess;
    if (resp.length != (read_ok ? p.length : 0)) {
      Fail(absl::DataLossError(
          absl::StrFormat("tcp peer sent %u data bytes for a %s of %u", resp.length,
                          OpcodeName(p.opcode), p.length)));
      return;
    }
    if (in_.size() < sizeof(resp) + resp.length) return;  // rest of the READ data
    if (read_ok) std::memcpy(p.local, in_.data() + sizeof(resp), p.length);
    if (IsAtomic(p.opcode) && status == CompletionStatus::kSuccess) {
      std::memcpy(p.local, &resp.atomic_result, 8);
    }
    in_.Consume(sizeof(resp) + resp.length);
    const Pending done = PopFront();
    Finish(done, status, resp.torn != 0);
    CompleteUnsent();
  }
}

void TcpEndpoint::Fail(absl::Status why) {
  if (!status_.ok()) return;
  status_ = std::move(why);
  // Requests that went out may or may not have executed; the rest never did.
  while (count_ > 0) {
    const Pending p = PopFront();
    Finish(p, p.sent ? CompletionStatus::kTransportError : p.local_status, false);
  }
  Completion c;
  c.wr_id = context_;
  c.opcode = Opcode::kDisconnect;
  c.status = CompletionStatus::kTransportError;
  cq_->PushDisconnect(c);
  cq_->Unwatch(socket_.get());
}

}  // namespace farm
