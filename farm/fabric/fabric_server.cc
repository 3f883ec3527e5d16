#include "farm/fabric/fabric_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "farm/base/log.h"
#include "farm/fabric/socket_util.h"

namespace farm {

FabricServer::FabricServer(UniqueFd listen_fd, ClusterKey key, std::string name,
                           absl::Duration handshake_timeout)
    : listen_fd_(std::move(listen_fd)),
      key_(key),
      name_(std::move(name)),
      handshake_timeout_(handshake_timeout) {}

FabricServer::~FabricServer() { Stop(); }

absl::Status FabricServer::Start(AcceptHandler handler) {
  if (thread_.joinable()) return absl::FailedPreconditionError("already listening");
  handler_ = std::move(handler);
  epoll_fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd_.valid()) return absl::ErrnoToStatus(errno, "epoll_create1");
  stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!stop_fd_.valid()) return absl::ErrnoToStatus(errno, "eventfd");
  for (int fd : {listen_fd_.get(), stop_fd_.get()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return absl::ErrnoToStatus(errno, "epoll_ctl");
    }
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void FabricServer::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof(one));
  thread_.join();
}

void FabricServer::WaitQuiescent() const {
  // Pairs with the seq_cst stores in Run: the caller's revocation precedes this load.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint64_t seen = activity_.load(std::memory_order_seq_cst);
  if ((seen & 1) == 0) return;  // idle: its next batch starts after our revocation
  while (activity_.load(std::memory_order_seq_cst) == seen) {
    ::usleep(20);
  }
}

void FabricServer::Run() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  for (;;) {
    // Idle until the next batch: a new epoch with the busy bit clear.
    const uint64_t epoch = (activity_.load(std::memory_order_relaxed) >> 1) + 1;
    activity_.store(epoch << 1, std::memory_order_seq_cst);
    const int timeout_ms = conns_.size() > connections_.load() ? 200 : -1;
    const int n = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, timeout_ms);
    activity_.store((epoch << 1) | 1, std::memory_order_seq_cst);
    if (n < 0 && errno != EINTR) {
      FARM_LOG(kError, "%s: epoll_wait: %s", name_, strerror(errno));
      break;
    }
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd_.get()) {
        stop = true;
      } else if (fd == listen_fd_.get()) {
        Accept();
      } else if (auto it = conns_.find(fd); it != conns_.end()) {
        HandleEvents(*it->second, events[i].events);
      }
    }
    if (stop) break;
    ExpireHandshakes();
  }
  std::vector<int> fds;
  for (auto& [fd, conn] : conns_) fds.push_back(fd);
  for (int fd : fds) Close(fd, absl::CancelledError("fabric shutting down"));
  activity_.store((activity_.load() + 2) & ~uint64_t{1}, std::memory_order_seq_cst);
}

void FabricServer::Accept() {
  for (;;) {
    const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        FARM_LOG(kWarning, "%s: accept: %s", name_, strerror(errno));
      }
      return;
    }
    (void)SetNoDelay(fd);  // fails harmlessly on Unix sockets
    auto conn = std::make_unique<Conn>();
    conn->fd.reset(fd);
    conn->handshake = std::make_unique<ServerHandshake>(&key_);
    conn->handshake_deadline = absl::Now() + handshake_timeout_;
    Conn& ref = *conn;
    conns_.emplace(fd, std::move(conn));
    UpdateInterest(ref);
  }
}

void FabricServer::UpdateInterest(Conn& conn) {
  uint32_t want = EPOLLRDHUP;
  if (conn.out.size() < kMaxPendingOutput) want |= EPOLLIN;
  if (!conn.out.empty()) want |= EPOLLOUT;
  if (want == conn.epoll_events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = conn.fd.get();
  const int op = conn.epoll_events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
  if (::epoll_ctl(epoll_fd_.get(), op, conn.fd.get(), &ev) == 0) conn.epoll_events = want;
}

void FabricServer::HandleEvents(Conn& conn, uint32_t events) {
  const int fd = conn.fd.get();
  absl::Status read_status;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    absl::StatusOr<size_t> read = ReadAvailable(fd, conn.in);
    if (!read.ok()) read_status = read.status();
  }
  if (!conn.established && !conn.in.empty()) {
    switch (conn.handshake->Advance(conn.in, conn.out)) {
      case ServerHandshake::Step::kNeedMore:
        break;
      case ServerHandshake::Step::kFailed:
        (void)WriteAvailable(fd, conn.out);  // e.g. the version in our challenge
        Close(fd, conn.handshake->error());
        return;
      case ServerHandshake::Step::kAuthenticated: {
        absl::StatusOr<AcceptResult> decision = handler_(conn.handshake->hello());
        ServerHandshake::EncodeAccept(decision.status(), decision.ok() ? decision->reply : "",
                                      conn.out);
        if (!decision.ok()) {
          (void)WriteAvailable(fd, conn.out);
          Close(fd, decision.status());
          return;
        }
        conn.on_close = std::move(decision->on_close);
        conn.established = true;
        conn.handshake.reset();
        connections_.fetch_add(1, std::memory_order_relaxed);
        break;
      }
    }
  }
  // Buffered input is processed on any event, and again after output drains: a
  // backend stops at the output cap, and nothing else would resume it.
  for (;;) {
    const size_t pending_in = conn.in.size();
    if (conn.established && pending_in > 0) {
      if (absl::Status s = ProcessInput(conn); !s.ok()) {
        (void)WriteAvailable(fd, conn.out);
        Close(fd, s);
        return;
      }
    }
    if (absl::Status s = WriteAvailable(fd, conn.out); !s.ok()) {
      Close(fd, s);
      return;
    }
    if (!conn.established || conn.in.empty() || conn.in.size() == pending_in ||
        conn.out.size() >= kMaxPendingOutput) {
      break;
    }
  }
  if (!read_status.ok()) {
    Close(fd, read_status);
    return;
  }
  UpdateInterest(conn);
}

void FabricServer::Close(int fd, const absl::Status& why) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> conn = std::move(it->second);
  conns_.erase(it);
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  if (conn->established) {
    connections_.fetch_sub(1, std::memory_order_relaxed);
    if (conn->on_close) conn->on_close();
  } else if (!absl::IsCancelled(why)) {
    // A refused or failed handshake is worth a line: it is a misconfigured or hostile peer.
    FARM_LOG(kWarning, "%s: refused connection: %s", name_, why.message());
  }
}

void FabricServer::ExpireHandshakes() {
  if (conns_.size() == connections_.load(std::memory_order_relaxed)) return;
  const absl::Time now = absl::Now();
  std::vector<int> expired;
  for (auto& [fd, conn] : conns_) {
    if (!conn->established && now > conn->handshake_deadline) expired.push_back(fd);
  }
  for (int fd : expired) Close(fd, absl::DeadlineExceededError("handshake timed out"));
}

}  // namespace farm
