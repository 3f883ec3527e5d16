#include "farm/fabric/verbs/verbs_completion_queue.h"

#include <sys/epoll.h>

#include <cerrno>

#include "farm/fabric/socket_util.h"
#include "farm/fabric/verbs/verbs_endpoint.h"

namespace farm {
namespace {

// Room for the disconnect notices of endpoints beyond the queue depth.
constexpr uint32_t kDisconnectReserve = 1024;
constexpr int kPollBatch = 32;

}  // namespace

absl::StatusOr<std::unique_ptr<VerbsCompletionQueue>> VerbsCompletionQueue::Create(
    const VerbsDevice& device, uint32_t depth) {
  if (depth == 0) return absl::InvalidArgumentError("completion queue depth must be > 0");
  std::unique_ptr<VerbsCompletionQueue> q(new VerbsCompletionQueue(device, depth));
  q->epoll_fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!q->epoll_fd_.valid()) return absl::ErrnoToStatus(errno, "epoll_create1");
  q->channel_ = ibv_create_comp_channel(device.context());
  if (q->channel_ == nullptr) return absl::ErrnoToStatus(errno, "ibv_create_comp_channel");
  if (absl::Status s = SetNonBlocking(q->channel_->fd); !s.ok()) return s;
  // Every posted request holds a claim, and a failed endpoint's flushed requests may
  // still sit in the device queue after their claims were released: twice the depth.
  const int cqe = static_cast<int>(
      std::min<uint64_t>(uint64_t{depth} * 2 + 64, static_cast<uint64_t>(device.attr().max_cqe)));
  q->cq_ = ibv_create_cq(device.context(), cqe, nullptr, q->channel_, 0);
  if (q->cq_ == nullptr) return absl::ErrnoToStatus(errno, "ibv_create_cq");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the completion channel
  if (::epoll_ctl(q->epoll_fd_.get(), EPOLL_CTL_ADD, q->channel_->fd, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(ADD)");
  }
  return q;
}

VerbsCompletionQueue::VerbsCompletionQueue(const VerbsDevice& device, uint32_t depth)
    : ClaimedCompletions(depth, kDisconnectReserve), device_(device) {}

VerbsCompletionQueue::~VerbsCompletionQueue() {
  if (cq_ != nullptr) {
    AckEvents();  // a CQ with unacknowledged events cannot be destroyed
    ibv_destroy_cq(cq_);
  }
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
}

absl::Status VerbsCompletionQueue::Attach(VerbsEndpoint* endpoint, uint32_t qp_num,
                                          int control_fd) {
  if (watched_.load(std::memory_order_relaxed) >= static_cast<int>(kDisconnectReserve)) {
    return absl::ResourceExhaustedError("too many endpoints on one completion queue");
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = endpoint;
  {
    MutexLock lock(&mu_);
    endpoints_[qp_num] = endpoint;
  }
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, control_fd, &ev) != 0) {
    const absl::Status error = absl::ErrnoToStatus(errno, "epoll_ctl(ADD)");
    MutexLock lock(&mu_);
    endpoints_.erase(qp_num);
    return error;
  }
  watched_.fetch_add(1, std::memory_order_release);
  return absl::OkStatus();
}

void VerbsCompletionQueue::StopWatching(int control_fd) {
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, control_fd, nullptr) == 0) {
    watched_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void VerbsCompletionQueue::Detach(uint32_t qp_num, int control_fd) {
  StopWatching(control_fd);
  MutexLock lock(&mu_);
  endpoints_.erase(qp_num);
}

void VerbsCompletionQueue::PrepareToWait() {
  // Acknowledge the events of earlier waits (so the channel is not readable for them),
  // then ask for one more. A completion that slipped in between is found by the Poll
  // the owner makes next, before it sleeps.
  AckEvents();
  (void)ibv_req_notify_cq(cq_, 0);
}

void VerbsCompletionQueue::AckEvents() {
  ibv_cq* cq;
  void* context;
  unsigned events = 0;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) ++events;
  if (events > 0) ibv_ack_cq_events(cq_, events);
}

void VerbsCompletionQueue::PollDevice() {
  ibv_wc wcs[kPollBatch];
  VerbsEndpoint* owners[kPollBatch];
  for (;;) {
    const int n = ibv_poll_cq(cq_, kPollBatch, wcs);
    if (n <= 0) return;
    {
      MutexLock lock(&mu_);
      for (int i = 0; i < n; ++i) {
        auto it = endpoints_.find(wcs[i].qp_num);
        owners[i] = it == endpoints_.end() ? nullptr : it->second;
      }
    }
    // Outside the lock: an endpoint may block briefly here to recover its queue pair.
    for (int i = 0; i < n; ++i) {
      if (owners[i] != nullptr) owners[i]->OnWorkCompletion(wcs[i]);
    }
    if (n < kPollBatch) return;
  }
}

void VerbsCompletionQueue::CheckSockets() {
  // Acquire: endpoints attached by another thread are fully built before we call them.
  (void)watched_.load(std::memory_order_acquire);
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  const int n = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, 0);
  for (int i = 0; i < n; ++i) {
    if (events[i].data.ptr == nullptr) continue;  // the channel: PrepareToWait drains it
    static_cast<VerbsEndpoint*>(events[i].data.ptr)->OnControlSocketReady(events[i].events);
  }
}

int VerbsCompletionQueue::Poll(absl::Span<Completion> out) {
  PollDevice();
  if (liveness_.Due() && watched_.load(std::memory_order_relaxed) > 0) CheckSockets();
  return PopCompletions(out);
}

}  // namespace farm
