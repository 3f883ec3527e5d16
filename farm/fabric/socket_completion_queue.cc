#include "farm/fabric/socket_completion_queue.h"

#include <sys/epoll.h>

#include <cerrno>

namespace farm {

// Room for the disconnect notices of endpoints beyond the queue depth.
constexpr size_t kDisconnectReserve = 1024;

absl::StatusOr<std::unique_ptr<SocketCompletionQueue>> SocketCompletionQueue::Create(
    uint32_t depth) {
  if (depth == 0) return absl::InvalidArgumentError("completion queue depth must be > 0");
  UniqueFd epfd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epfd.valid()) return absl::ErrnoToStatus(errno, "epoll_create1");
  return std::unique_ptr<SocketCompletionQueue>(new SocketCompletionQueue(depth, std::move(epfd)));
}

SocketCompletionQueue::SocketCompletionQueue(uint32_t depth, UniqueFd epoll_fd)
    : ClaimedCompletions(depth, kDisconnectReserve), epoll_fd_(std::move(epoll_fd)) {}

namespace {
epoll_event EventFor(SocketEndpointBase* endpoint, bool want_write) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u);
  ev.data.ptr = endpoint;
  return ev;
}
}  // namespace

absl::Status SocketCompletionQueue::Watch(int fd, SocketEndpointBase* endpoint, bool want_write) {
  if (watched_.load(std::memory_order_relaxed) >= static_cast<int>(kDisconnectReserve)) {
    return absl::ResourceExhaustedError("too many endpoints on one completion queue");
  }
  epoll_event ev = EventFor(endpoint, want_write);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(ADD)");
  }
  watched_.fetch_add(1, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status SocketCompletionQueue::Rewatch(int fd, SocketEndpointBase* endpoint,
                                            bool want_write) {
  epoll_event ev = EventFor(endpoint, want_write);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(MOD)");
  }
  return absl::OkStatus();
}

void SocketCompletionQueue::Unwatch(int fd) {
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr) == 0) {
    watched_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void SocketCompletionQueue::CheckSockets() {
  // Acquire: endpoints registered by another thread are fully built before we call them.
  (void)watched_.load(std::memory_order_acquire);
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  const int n = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, 0);
  for (int i = 0; i < n; ++i) {
    static_cast<SocketEndpointBase*>(events[i].data.ptr)->OnSocketReady(events[i].events);
  }
}

int SocketCompletionQueue::Poll(absl::Span<Completion> out) {
  if (!held_back_.empty()) {
    for (SocketEndpointBase* ep : held_back_) ep->SendHeldBack();  // never re-registers
    held_back_.clear();
  }
  if (awaiting_ > 0) {
    CheckSockets();
  } else if (liveness_.Due() && watched_.load(std::memory_order_relaxed) > 0) {
    CheckSockets();
  }
  return PopCompletions(out);
}

}  // namespace farm
