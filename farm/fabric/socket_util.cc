#include "farm/fabric/socket_util.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace farm {
namespace {

struct HostPort {
  std::string host;
  std::string port;
};

absl::StatusOr<HostPort> SplitHostPort(absl::string_view s) {
  HostPort hp;
  size_t colon;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == absl::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return absl::InvalidArgumentError(absl::StrCat("bad address '", s, "': want [v6]:port"));
    }
    hp.host = std::string(s.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = s.rfind(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("bad address '", s, "': want host:port"));
    }
    hp.host = std::string(s.substr(0, colon));
  }
  hp.port = std::string(s.substr(colon + 1));
  uint32_t port;
  if (!absl::SimpleAtoi(hp.port, &port) || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad port in address '", s, "'"));
  }
  return hp;
}

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};

absl::StatusOr<std::unique_ptr<addrinfo, AddrInfoDeleter>> Resolve(absl::string_view host_port,
                                                                    bool passive) {
  absl::StatusOr<HostPort> hp = SplitHostPort(host_port);
  if (!hp.ok()) return hp.status();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(hp->host.empty() ? nullptr : hp->host.c_str(), hp->port.c_str(),
                             &hints, &result);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", host_port, "': ", gai_strerror(rc)));
  }
  return std::unique_ptr<addrinfo, AddrInfoDeleter>(result);
}

int MillisUntil(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

// Waits until fd is ready for `events`; DeadlineExceeded at the deadline.
absl::Status WaitFd(int fd, short events, absl::Time deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, MillisUntil(deadline));
    if (rc > 0) return absl::OkStatus();
    if (rc == 0) return absl::DeadlineExceededError("socket operation timed out");
    if (errno != EINTR) return absl::ErrnoToStatus(errno, "poll");
  }
}

absl::Status PeerGone(int err, absl::string_view what) {
  if (err == 0) return absl::UnavailableError(absl::StrCat(what, ": peer closed the connection"));
  return absl::UnavailableError(absl::StrCat(what, ": ", strerror(err)));
}

absl::StatusOr<UniqueFd> ConnectWithDeadline(int family, const sockaddr* addr, socklen_t len,
                                             absl::Time deadline, absl::string_view what) {
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, "socket");
  if (::connect(fd.get(), addr, len) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) {
      return absl::UnavailableError(absl::StrCat("connect to ", what, ": ", strerror(errno)));
    }
    if (absl::Status s = WaitFd(fd.get(), POLLOUT, deadline); !s.ok()) {
      return absl::DeadlineExceededError(absl::StrCat("connect to ", what, " timed out"));
    }
    int err = 0;
    socklen_t err_len = sizeof(err);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &err_len);
    if (err != 0) {
      return absl::UnavailableError(absl::StrCat("connect to ", what, ": ", strerror(err)));
    }
  }
  return fd;
}

absl::StatusOr<sockaddr_un> UnixAddress(absl::string_view path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "unix socket path '%s' must be 1..%d bytes", path, sizeof(addr.sun_path) - 1));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

}  // namespace

absl::StatusOr<UniqueFd> ListenTcp(absl::string_view host_port) {
  auto ai = Resolve(host_port, /*passive=*/true);
  if (!ai.ok()) return ai.status();
  absl::Status last = absl::UnavailableError(absl::StrCat("no address for ", host_port));
  for (addrinfo* a = ai->get(); a != nullptr; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = absl::ErrnoToStatus(errno, "socket");
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      last = absl::ErrnoToStatus(errno, absl::StrCat("bind ", host_port));
      continue;
    }
    if (::listen(fd.get(), 128) != 0) {
      last = absl::ErrnoToStatus(errno, absl::StrCat("listen ", host_port));
      continue;
    }
    return fd;
  }
  return last;
}

absl::StatusOr<UniqueFd> ConnectTcp(absl::string_view host_port, absl::Time deadline) {
  auto ai = Resolve(host_port, /*passive=*/false);
  if (!ai.ok()) return ai.status();
  absl::Status last = absl::UnavailableError(absl::StrCat("no address for ", host_port));
  for (addrinfo* a = ai->get(); a != nullptr; a = a->ai_next) {
    absl::StatusOr<UniqueFd> fd =
        ConnectWithDeadline(a->ai_family, a->ai_addr, a->ai_addrlen, deadline, host_port);
    if (fd.ok()) {
      if (absl::Status s = SetNoDelay(fd->get()); !s.ok()) return s;
      return fd;
    }
    last = fd.status();
  }
  return last;
}

absl::StatusOr<std::string> LocalTcpAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return absl::ErrnoToStatus(errno, "getsockname");
  }
  char host[NI_MAXHOST], port[NI_MAXSERV];
  const int rc = getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), port,
                             sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
  if (rc != 0) return absl::InternalError(absl::StrCat("getnameinfo: ", gai_strerror(rc)));
  if (ss.ss_family == AF_INET6) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<PeerListener> ListenTcpForPeers(absl::string_view host_port,
                                               absl::string_view what) {
  absl::StatusOr<UniqueFd> fd = ListenTcp(host_port.empty() ? "127.0.0.1:0" : host_port);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<std::string> bound = LocalTcpAddress(fd->get());
  if (!bound.ok()) return bound.status();
  if (absl::StartsWith(*bound, "0.0.0.0:") || absl::StartsWith(*bound, "[::]:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " bound to the wildcard address ", *bound,
        ": give a specific host address peers can reach as listen_address"));
  }
  return PeerListener{std::move(*fd), std::move(*bound)};
}

absl::StatusOr<UniqueFd> ListenUnix(absl::string_view path) {
  absl::StatusOr<sockaddr_un> addr = UnixAddress(path);
  if (!addr.ok()) return addr.status();
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, "socket");
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    if (errno != EADDRINUSE) return absl::ErrnoToStatus(errno, absl::StrCat("bind ", path));
    // A socket file exists. Replace it only if nobody listens on it.
    absl::StatusOr<UniqueFd> probe = ConnectUnix(path, absl::Now() + absl::Milliseconds(200));
    if (probe.ok()) {
      return absl::AlreadyExistsError(absl::StrCat("another process listens on ", path));
    }
    struct stat st;
    if (::lstat(std::string(path).c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      return absl::AlreadyExistsError(absl::StrCat(path, " exists and is not a socket"));
    }
    ::unlink(std::string(path).c_str());
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr)) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("bind ", path));
    }
  }
  if (::listen(fd.get(), 128) != 0) return absl::ErrnoToStatus(errno, "listen");
  return fd;
}

absl::StatusOr<UniqueFd> ConnectUnix(absl::string_view path, absl::Time deadline) {
  absl::StatusOr<sockaddr_un> addr = UnixAddress(path);
  if (!addr.ok()) return addr.status();
  return ConnectWithDeadline(AF_UNIX, reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr), deadline,
                             path);
}

absl::Status SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return absl::ErrnoToStatus(errno, "fcntl(O_NONBLOCK)");
  }
  return absl::OkStatus();
}

absl::Status SetNoDelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return absl::ErrnoToStatus(errno, "setsockopt(TCP_NODELAY)");
  }
  return absl::OkStatus();
}

absl::Status SendAll(int fd, const void* data, size_t n, absl::Time deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t rc = ::send(fd, p, n, MSG_NOSIGNAL);
    if (rc > 0) {
      p += rc;
      n -= static_cast<size_t>(rc);
      continue;
    }
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (absl::Status s = WaitFd(fd, POLLOUT, deadline); !s.ok()) return s;
      continue;
    }
    return PeerGone(errno, "send");
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, void* data, size_t n, absl::Time deadline) {
  return RecvWithFds(fd, data, n, nullptr, deadline);
}

absl::Status SendWithFds(int fd, const void* data, size_t n, const std::vector<int>& fds,
                         absl::Time deadline) {
  if (n == 0) return absl::InvalidArgumentError("SendWithFds needs at least one byte");
  if (fds.empty()) return SendAll(fd, data, n, deadline);
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov{const_cast<void*>(data), n};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  for (;;) {
    const ssize_t rc = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (rc > 0) {
      // The descriptors went with the first byte; send any remainder plainly.
      const size_t sent = static_cast<size_t>(rc);
      return sent == n ? absl::OkStatus()
                       : SendAll(fd, static_cast<const char*>(data) + sent, n - sent, deadline);
    }
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (absl::Status s = WaitFd(fd, POLLOUT, deadline); !s.ok()) return s;
      continue;
    }
    return PeerGone(errno, "sendmsg");
  }
}

absl::Status RecvWithFds(int fd, void* data, size_t n, std::vector<UniqueFd>* fds,
                         absl::Time deadline) {
  char* p = static_cast<char*>(data);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
  while (n > 0) {
    iovec iov{p, n};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t rc = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (rc > 0) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int received;
          std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          if (fds != nullptr) {
            fds->emplace_back(received);
          } else {
            ::close(received);  // unexpected descriptors are not leaked
          }
        }
      }
      p += rc;
      n -= static_cast<size_t>(rc);
      continue;
    }
    if (rc == 0) return PeerGone(0, "recv");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (absl::Status s = WaitFd(fd, POLLIN, deadline); !s.ok()) return s;
      continue;
    }
    return PeerGone(errno, "recv");
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> ReadAvailable(int fd, ByteBuffer& in) {
  size_t total = 0;
  for (;;) {
    constexpr size_t kChunk = 64 * 1024;
    char* dst = in.Reserve(kChunk);
    const ssize_t rc = ::recv(fd, dst, kChunk, 0);
    if (rc > 0) {
      in.Commit(static_cast<size_t>(rc));
      total += static_cast<size_t>(rc);
      if (static_cast<size_t>(rc) < kChunk) return total;
      continue;
    }
    if (rc == 0) return PeerGone(0, "recv");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return total;
    return PeerGone(errno, "recv");
  }
}

absl::Status WriteAvailable(int fd, ByteBuffer& out) {
  while (!out.empty()) {
    const ssize_t rc = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rc > 0) {
      out.Consume(static_cast<size_t>(rc));
      continue;
    }
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return absl::OkStatus();
    return PeerGone(errno, "send");
  }
  return absl::OkStatus();
}

}  // namespace farm
