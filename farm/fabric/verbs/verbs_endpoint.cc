#include "farm/fabric/verbs/verbs_endpoint.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "absl/strings/str_cat.h"
#include "farm/fabric/socket_util.h"
#include "farm/fabric/validate.h"
#include "farm/fabric/verbs/verbs_qp.h"

namespace farm {
namespace {

// Sends `request` and reads the reply of `reply_kind` on the control socket; the QP
// exchange of connecting and of recovering.
absl::StatusOr<verbs_wire::QpFrame> Exchange(int fd, const verbs_wire::QpFrame& request,
                                             verbs_wire::Kind reply_kind, absl::Time deadline) {
  if (absl::Status s = SendAll(fd, &request, sizeof(request), deadline); !s.ok()) return s;
  verbs_wire::QpFrame reply;
  if (absl::Status s = RecvAll(fd, &reply, sizeof(reply), deadline); !s.ok()) return s;
  if (absl::Status s = verbs_wire::CheckFrame(reply, reply_kind); !s.ok()) return s;
  if (reply.status != 0) {
    return absl::UnavailableError("the peer could not set up its queue pair (see its log)");
  }
  return reply;
}

// The fabric's status for an error work completion, or nullopt for a transport error
// (the connection cannot go on).
std::optional<CompletionStatus> RequestError(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_REM_ACCESS_ERR:
      return CompletionStatus::kRemoteAccessError;
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
      return CompletionStatus::kRemoteInvalidRequest;
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
      return CompletionStatus::kLocalProtectionError;
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<VerbsEndpoint>> VerbsEndpoint::Connect(
    const VerbsEndpointConfig& config, UniqueFd control, VerbsCompletionQueue* cq,
    uint64_t context) {
  const VerbsDevice& device = cq->device();
  absl::StatusOr<ibv_qp*> qp = CreateRcQp(device, {cq->cq(), cq->cq(), nullptr, config.max_outstanding});
  if (!qp.ok()) return qp.status();
  // Owns the QP from here on, so every error path below destroys it.
  std::unique_ptr<VerbsEndpoint> ep(new VerbsEndpoint(config, std::move(control), cq, *qp, context));
  const uint32_t psn = RandomPsn();
  absl::StatusOr<verbs_wire::QpFrame> reply = Exchange(
      ep->control_.get(),
      verbs_wire::MakeFrame(verbs_wire::kConnectRequest, (*qp)->qp_num, psn, device.address()),
      verbs_wire::kConnectReply, absl::Now() + config.exchange_timeout);
  if (!reply.ok()) return reply.status();
  if (absl::Status s = ConnectRcQp(*qp, device, psn, *reply); !s.ok()) return s;
  if (absl::Status s = cq->Attach(ep.get(), (*qp)->qp_num, ep->control_.get()); !s.ok()) return s;
  return ep;
}

VerbsEndpoint::VerbsEndpoint(const VerbsEndpointConfig& config, UniqueFd control,
                             VerbsCompletionQueue* cq, ibv_qp* qp, uint64_t context)
    : config_(config),
      control_(std::move(control)),
      cq_(cq),
      qp_(qp),
      context_(context),
      signal_interval_(std::max<uint32_t>(1, config.max_outstanding / 4)),
      slots_(std::max<uint32_t>(1, config.max_outstanding)) {}

VerbsEndpoint::~VerbsEndpoint() {
  cq_->Detach(qp_->qp_num, control_.get());
  // Outstanding claims are released so the queue's accounting stays exact; the device
  // drops what it still holds for this QP when it is destroyed.
  for (; head_ < tail_; ++head_) cq_->Complete(nullptr);
  ibv_destroy_qp(qp_);
}

absl::Status VerbsEndpoint::Stage(const WorkRequest& wr) {
  if (!status_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("endpoint failed: ", status_.message()));
  }
  if (absl::Status s = ValidateWorkRequest(wr, config_.max_op_bytes); !s.ok()) return s;
  if (wr.remote->rkey > 0xFFFFFFFFu) {
    return absl::InvalidArgumentError(
        absl::StrCat("rkey ", wr.remote->rkey, " is not a verbs key (a capability of another backend?)"));
  }
  if (tail_ - head_ >= slots_.size()) {
    return absl::ResourceExhaustedError("send queue full: max_outstanding requests in flight");
  }
  if (!cq_->Claim()) return absl::ResourceExhaustedError("completion queue full");

  const uint64_t seq = tail_++;
  Slot& s = slot(seq);
  s.user_wr_id = wr.wr_id;
  s.opcode = wr.opcode;
  s.user_signaled = wr.signaled;
  s.in_device = false;
  s.sge = {reinterpret_cast<uintptr_t>(wr.local), wr.length, wr.lkey};
  s.wr = {};
  s.wr.wr_id = seq;
  s.wr.sg_list = wr.length > 0 ? &s.sge : nullptr;
  s.wr.num_sge = wr.length > 0 ? 1 : 0;
  const bool signal = wr.signaled || ++since_signal_ >= signal_interval_;
  if (signal) since_signal_ = 0;
  s.wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
  const uint64_t remote_addr = wr.remote->remote_base + wr.remote_offset;
  const auto rkey = static_cast<uint32_t>(wr.remote->rkey);
  switch (wr.opcode) {
    case Opcode::kRead:
    case Opcode::kWrite:
      s.wr.opcode = wr.opcode == Opcode::kRead ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
      if (wr.notify != kNoDoorbell) {
        s.wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        s.wr.imm_data = htonl(wr.notify);
      }
      s.wr.wr.rdma.remote_addr = remote_addr;
      s.wr.wr.rdma.rkey = rkey;
      break;
    case Opcode::kCompareSwap:
    case Opcode::kFetchAdd:
      s.wr.opcode = wr.opcode == Opcode::kCompareSwap ? IBV_WR_ATOMIC_CMP_AND_SWP
                                                      : IBV_WR_ATOMIC_FETCH_AND_ADD;
      s.wr.wr.atomic.remote_addr = remote_addr;
      s.wr.wr.atomic.rkey = rkey;
      s.wr.wr.atomic.compare_add = wr.compare_add;
      s.wr.wr.atomic.swap = wr.swap;
      break;
    case Opcode::kDisconnect:
      break;  // refused by ValidateWorkRequest
  }
  return absl::OkStatus();
}

absl::Status VerbsEndpoint::PostStaged(uint64_t from) {
  if (from == tail_ || recovering_) return absl::OkStatus();  // recovery posts them
  for (uint64_t seq = from; seq < tail_; ++seq) {
    Slot& s = slot(seq);
    s.wr.next = seq + 1 < tail_ ? &slot(seq + 1).wr : nullptr;
    s.in_device = true;
  }
  in_device_ += static_cast<uint32_t>(tail_ - from);
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_, &slot(from).wr, &bad);
  if (rc == 0) return absl::OkStatus();
  // The device took the chain up to `bad`; the rest was never posted.
  uint64_t first_refused = from;
  while (first_refused < tail_ && &slot(first_refused).wr != bad) ++first_refused;
  for (uint64_t seq = first_refused; seq < tail_; ++seq) {
    slot(seq).in_device = false;
    --in_device_;
    cq_->Complete(nullptr);
  }
  tail_ = first_refused;
  return absl::ErrnoToStatus(rc, "ibv_post_send");
}

absl::Status VerbsEndpoint::Post(const WorkRequest& wr) {
  const uint64_t from = tail_;
  if (absl::Status s = Stage(wr); !s.ok()) return s;
  return PostStaged(from);
}

absl::Status VerbsEndpoint::PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted) {
  const uint64_t from = tail_;
  absl::Status staged;
  for (const WorkRequest& wr : wrs) {
    staged = Stage(wr);
    if (!staged.ok()) break;
  }
  absl::Status post = PostStaged(from);
  *posted = static_cast<size_t>(tail_ - from);
  return post.ok() ? staged : post;
}

void VerbsEndpoint::Finish(uint64_t seq, CompletionStatus status, uint32_t byte_len) {
  const Slot& s = slot(seq);
  if (status == CompletionStatus::kSuccess && !s.user_signaled) {
    cq_->Complete(nullptr);
    return;
  }
  Completion c;
  c.wr_id = s.user_wr_id;
  c.opcode = s.opcode;
  c.status = status;
  c.byte_len = status == CompletionStatus::kSuccess ? byte_len : 0;
  cq_->Complete(&c);
}

void VerbsEndpoint::OnWorkCompletion(const ibv_wc& wc) {
  const uint64_t seq = wc.wr_id;
  if (!status_.ok() || seq < head_ || seq >= tail_) return;  // left over from a failure
  if (recovering_) {
    // The device is flushing: everything up to `seq` left it without executing.
    for (uint64_t s = std::max(flushed_upto_, head_); s <= seq; ++s) {
      if (slot(s).in_device) {
        slot(s).in_device = false;
        --in_device_;
      }
    }
    flushed_upto_ = std::max(flushed_upto_, seq + 1);
    if (in_device_ == 0) Recover();
    return;
  }
  // Completions arrive in post order: the requests before `seq` were unsignaled to the
  // device and succeeded.
  for (; head_ < seq; ++head_) {
    slot(head_).in_device = false;
    --in_device_;
    Finish(head_, CompletionStatus::kSuccess, 0);
  }
  Slot& s = slot(seq);
  s.in_device = false;
  --in_device_;
  if (wc.status == IBV_WC_SUCCESS) {
    Finish(seq, CompletionStatus::kSuccess, s.opcode == Opcode::kRead ? wc.byte_len : s.sge.length);
    head_ = seq + 1;
    return;
  }
  const std::optional<CompletionStatus> error = RequestError(wc.status);
  if (!error.has_value()) {
    Fail(absl::UnavailableError(absl::StrCat("RDMA ", OpcodeName(s.opcode), " failed: ",
                                             ibv_wc_status_str(wc.status))));
    return;
  }
  Finish(seq, *error, 0);
  head_ = seq + 1;
  recovering_ = true;
  flushed_upto_ = head_;
  if (in_device_ == 0) Recover();
}

void VerbsEndpoint::Recover() {
  const VerbsDevice& device = cq_->device();
  const uint32_t psn = RandomPsn();
  absl::Status s = ResetQp(qp_);
  if (s.ok()) {
    absl::StatusOr<verbs_wire::QpFrame> reply = Exchange(
        control_.get(),
        verbs_wire::MakeFrame(verbs_wire::kResetRequest, qp_->qp_num, psn, device.address()),
        verbs_wire::kResetReply, absl::Now() + config_.exchange_timeout);
    s = reply.ok() ? ConnectRcQp(qp_, device, psn, *reply) : reply.status();
  }
  if (!s.ok()) {
    Fail(absl::UnavailableError(absl::StrCat("recovering the queue pair failed: ", s.message())));
    return;
  }
  recovering_ = false;
  // The flushed requests, and those posted meanwhile, go again in their order.
  if (absl::Status post = PostStaged(head_); !post.ok()) Fail(post);
}

void VerbsEndpoint::OnControlSocketReady(uint32_t events) {
  if (!status_.ok()) return;
  char byte;
  const ssize_t n = ::recv(control_.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
      (events & (EPOLLHUP | EPOLLERR))) {
    Fail(absl::UnavailableError("the peer closed the connection"));
  } else if (n > 0) {
    Fail(absl::DataLossError("unexpected data on the verbs control socket"));
  }
}

void VerbsEndpoint::Fail(absl::Status why) {
  if (!status_.ok()) return;
  status_ = std::move(why);
  (void)FailQp(qp_);  // what the device still holds is flushed; those completions are dropped
  // Requests that reached the device may or may not have executed; the rest never did.
  for (; head_ < tail_; ++head_) Finish(head_, CompletionStatus::kTransportError, 0);
  in_device_ = 0;
  recovering_ = false;
  cq_->StopWatching(control_.get());
  Completion c;
  c.wr_id = context_;
  c.opcode = Opcode::kDisconnect;
  c.status = CompletionStatus::kTransportError;
  cq_->PushDisconnect(c);
}

}  // namespace farm
