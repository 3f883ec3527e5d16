#include "tools/fabric_bench/tcp_baseline.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "farm/fabric/byte_buffer.h"
#include "farm/fabric/socket_util.h"
#include "tools/fabric_bench/bench_protocol.h"

namespace farm::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Conn {
  UniqueFd fd;
  ByteBuffer in, out;
  bool want_write = false;
};

void SetInterest(int epfd, Conn& c, bool want_write) {
  epoll_event ev{};
  ev.events = EPOLLIN | (want_write ? EPOLLOUT : 0u);
  ev.data.fd = c.fd.get();
  ::epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd.get(), &ev);
  c.want_write = want_write;
}

absl::Status SendFully(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t rc = ::send(fd, c, n, MSG_NOSIGNAL);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return absl::ErrnoToStatus(errno, "send");
    c += rc;
    n -= static_cast<size_t>(rc);
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> ConnectBlocking(uint16_t port) {
  absl::StatusOr<UniqueFd> fd =
      ConnectTcp(absl::StrCat("127.0.0.1:", port), absl::Now() + absl::Seconds(5));
  if (!fd.ok()) return fd.status();
  const int flags = ::fcntl(fd->get(), F_GETFL);
  ::fcntl(fd->get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpBaselineServer>> TcpBaselineServer::Start(const char* memory,
                                                                            uint64_t bytes) {
  std::unique_ptr<TcpBaselineServer> s(new TcpBaselineServer(memory, bytes));
  absl::StatusOr<UniqueFd> fd = ListenTcp("127.0.0.1:0");
  if (!fd.ok()) return fd.status();
  s->listen_fd_ = std::move(*fd);
  absl::StatusOr<std::string> addr = LocalTcpAddress(s->listen_fd_.get());
  if (!addr.ok()) return addr.status();
  uint32_t port = 0;
  if (!absl::SimpleAtoi(addr->substr(addr->rfind(':') + 1), &port)) {
    return absl::InternalError("cannot read the bound port");
  }
  s->port_ = static_cast<uint16_t>(port);
  s->stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

TcpBaselineServer::~TcpBaselineServer() {
  const uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof(one));
  thread_.join();
}

void TcpBaselineServer::Run() {
  UniqueFd epfd(::epoll_create1(EPOLL_CLOEXEC));
  for (int fd : {listen_fd_.get(), stop_fd_.get()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epfd.get(), EPOLL_CTL_ADD, fd, &ev);
  }
  absl::flat_hash_map<int, std::unique_ptr<Conn>> conns;
  epoll_event events[64];
  for (;;) {
    const int n = ::epoll_wait(epfd.get(), events, 64, -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd_.get()) return;
      if (fd == listen_fd_.get()) {
        const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) continue;
        (void)SetNoDelay(c);
        auto conn = std::make_unique<Conn>();
        conn->fd.reset(c);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = c;
        ::epoll_ctl(epfd.get(), EPOLL_CTL_ADD, c, &ev);
        conns.emplace(c, std::move(conn));
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      bool close = !ReadAvailable(fd, c.in).ok();
      while (c.in.size() >= sizeof(ReadRequest)) {
        ReadRequest req;
        std::memcpy(&req, c.in.data(), sizeof(req));
        c.in.Consume(sizeof(req));
        if (req.size > bytes_ || req.offset > bytes_ - req.size) {
          close = true;
          break;
        }
        c.out.Append(memory_ + req.offset, req.size);
      }
      if (!WriteAvailable(fd, c.out).ok()) close = true;
      if (close) {
        ::epoll_ctl(epfd.get(), EPOLL_CTL_DEL, fd, nullptr);
        conns.erase(it);
        continue;
      }
      if (c.out.empty() == c.want_write) SetInterest(epfd.get(), c, !c.out.empty());
    }
  }
}

absl::StatusOr<Measurement> MeasureTcpBaseline(uint16_t port, uint32_t size, uint64_t bytes,
                                               int window, absl::Duration duration) {
  absl::StatusOr<UniqueFd> fd = ConnectBlocking(port);
  if (!fd.ok()) return fd.status();
  const int s = fd->get();
  RandomOffsets offsets(bytes, size);
  std::vector<char> buf(std::max<size_t>(size, 64 * 1024));
  const auto span = std::chrono::nanoseconds(absl::ToInt64Nanoseconds(duration));
  Measurement m;

  // Latency: one request at a time.
  LatencySamples samples;
  for (const auto end = Clock::now() + span; Clock::now() < end;) {
    const auto t0 = Clock::now();
    ReadRequest req{offsets.Next(), size, 0};
    if (absl::Status st = SendFully(s, &req, sizeof(req)); !st.ok()) return st;
    for (size_t got = 0; got < size;) {
      const ssize_t rc = ::recv(s, buf.data(), size - got, 0);
      if (rc <= 0) return absl::UnavailableError("baseline server closed the connection");
      got += static_cast<size_t>(rc);
    }
    samples.Add(static_cast<uint64_t>((Clock::now() - t0).count()));
  }
  m.p50_us = samples.PercentileUs(50);
  m.p99_us = samples.PercentileUs(99);

  // Rate: `window` requests in flight, each sent as it is issued.
  uint64_t completed = 0, in_flight = 0, pending_bytes = 0;
  auto issue = [&]() -> absl::Status {
    ReadRequest req{offsets.Next(), size, 0};
    ++in_flight;
    return SendFully(s, &req, sizeof(req));
  };
  for (int i = 0; i < window; ++i) {
    if (absl::Status st = issue(); !st.ok()) return st;
  }
  const auto start = Clock::now();
  const auto end = start + span;
  auto stopped_at = end;
  bool stopping = false;
  while (in_flight > 0) {
    const ssize_t rc = ::recv(s, buf.data(), buf.size(), 0);
    if (rc <= 0) return absl::UnavailableError("baseline server closed the connection");
    pending_bytes += static_cast<uint64_t>(rc);
    while (pending_bytes >= size) {
      pending_bytes -= size;
      --in_flight;
      if (!stopping) {
        ++completed;
        const auto now = Clock::now();
        stopping = now >= end;
        if (stopping) stopped_at = now;
        if (!stopping) {
          if (absl::Status st = issue(); !st.ok()) return st;
        }
      }
    }
  }
  const double seconds = std::chrono::duration<double>(stopped_at - start).count();
  m.ops_per_second = completed / seconds;
  return m;
}

}  // namespace farm::bench
