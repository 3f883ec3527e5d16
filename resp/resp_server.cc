#include "resp/resp_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "resp/resp_server_worker.h"

namespace farm::resp {
namespace {

constexpr int kListenBacklog = 511;
constexpr int kMaxAcceptsPerEvent = 64;
constexpr absl::Duration kAcceptPause = absl::Milliseconds(100);

// "host:port" or "[v6]:port" -> host, port.
absl::Status SplitHostPort(const std::string& listen, std::string* host, std::string* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("listen address '", listen, "' has no port"));
  }
  *host = listen.substr(0, colon);
  *port = listen.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  uint32_t number = 0;
  if (!absl::SimpleAtoi(*port, &number) || number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad port in listen address '", listen, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RespServer>> RespServer::Start(
    std::vector<Context*> threads, SessionFactory factory, RespServerOptions options) {
  if (threads.empty()) return absl::InvalidArgumentError("RespServer needs at least one thread");
  if (!factory) return absl::InvalidArgumentError("RespServer needs a session factory");
  std::unique_ptr<RespServer> server(new RespServer(std::move(threads), std::move(options)));
  if (absl::Status s = server->Listen(); !s.ok()) return s;

  for (size_t i = 0; i < server->threads_.size(); ++i) {
    SessionInfo info;
    info.thread = i;
    info.counters = &server->counters_;
    info.port = server->port_;
    info.max_clients = server->options_.max_clients;
    server->workers_.push_back(std::make_unique<RespServerWorker>(server->threads_[i], factory, info));
  }
  absl::Status status;
  for (auto& worker : server->workers_) {
    RunOnContext(*worker->context(), [&] { status.Update(worker->Init()); });
  }
  if (status.ok()) {
    RespServer* s = server.get();
    RunOnContext(*s->threads_[0], [&] {
      status = s->threads_[0]->WatchFd(s->listen_fd_.get(), [s] { s->OnAcceptable(); });
      s->listening_ = status.ok();
    });
  }
  if (!status.ok()) return status;  // the destructor stops what started
  return server;
}

RespServer::RespServer(std::vector<Context*> threads, RespServerOptions options)
    : threads_(std::move(threads)), options_(std::move(options)) {}

RespServer::~RespServer() { Stop(); }

absl::Status RespServer::Listen() {
  std::string host, port;
  if (absl::Status s = SplitHostPort(options_.listen, &host, &port); !s.ok()) return s;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", options_.listen, "': ", ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, "socket");
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("bind ", options_.listen));
  }
  if (::listen(fd.get(), kListenBacklog) != 0) return absl::ErrnoToStatus(errno, "listen");
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return absl::ErrnoToStatus(errno, "getsockname");
  }
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = std::move(fd);
  return absl::OkStatus();
}

void RespServer::OnAcceptable() {
  for (int i = 0; i < kMaxAcceptsPerEvent && listening_; ++i) {
    const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        PauseAccepting();  // level-triggered: watching on would spin
      }
      return;  // EAGAIN, or an error to retry on the next event
    }
    UniqueFd connection(fd);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (counters_.connections_open.load(std::memory_order_relaxed) >= options_.max_clients) {
      Reject(std::move(connection));
      continue;
    }
    RespCounters::Add(counters_.connections_accepted);
    RespCounters::Add(counters_.connections_open);
    RespServerWorker* worker = workers_[next_worker_++ % workers_.size()].get();
    worker->context()->Post(
        [worker, connection = std::move(connection), id = next_client_id_++]() mutable {
          worker->Adopt(std::move(connection), id);
        });
  }
}

void RespServer::Reject(UniqueFd fd) {
  RespCounters::Add(counters_.connections_rejected);
  static constexpr char kError[] = "-ERR max number of clients reached\r\n";
  // Best effort, as Redis: a fresh socket's buffer takes it.
  [[maybe_unused]] ssize_t n =
      ::send(fd.get(), kError, sizeof(kError) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void RespServer::PauseAccepting() {
  threads_[0]->UnwatchFd(listen_fd_.get());
  listening_ = false;
  resume_timer_ = threads_[0]->RunAfter(kAcceptPause, [this] {
    resume_timer_ = 0;
    listening_ = threads_[0]->WatchFd(listen_fd_.get(), [this] { OnAcceptable(); }).ok();
  });
}

void RespServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // First no new connections, then close the ones there are, each on its thread.
  RunOnContext(*threads_[0], [this] {
    if (listening_) threads_[0]->UnwatchFd(listen_fd_.get());
    listening_ = false;
    if (resume_timer_ != 0) threads_[0]->CancelTimer(resume_timer_);
    resume_timer_ = 0;
  });
  for (auto& worker : workers_) {
    RunOnContext(*worker->context(), [&worker] { worker->CloseAll(); });
  }
  listen_fd_.reset();
}

}  // namespace farm::resp
