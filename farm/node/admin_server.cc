#include "farm/node/admin_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "farm/fabric/socket_util.h"
#include "farm/node/admin_protocol.h"

namespace farm::node {

constexpr absl::Duration kIoTimeout = absl::Seconds(2);

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(const std::string& address,
                                                                Handler handler) {
  absl::StatusOr<UniqueFd> listener = ListenTcp(address);
  if (!listener.ok()) return listener.status();
  absl::StatusOr<std::string> bound = LocalTcpAddress(listener->get());
  if (!bound.ok()) return bound.status();
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return absl::ErrnoToStatus(errno, "eventfd");
  std::unique_ptr<AdminServer> server(
      new AdminServer(std::move(*listener), std::move(stop), *bound, std::move(handler)));
  server->thread_ = std::thread([s = server.get()] { s->Run(); });
  return server;
}

AdminServer::AdminServer(UniqueFd listener, UniqueFd stop, std::string address, Handler handler)
    : listener_(std::move(listener)),
      stop_(std::move(stop)),
      address_(std::move(address)),
      handler_(std::move(handler)) {}

AdminServer::~AdminServer() {
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

void AdminServer::Run() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (conn.valid()) Serve(conn.get());
  }
}

void AdminServer::Serve(int fd) {
  for (;;) {  // requests until the client closes, errs or stalls, or the server stops
    pollfd fds[2] = {{fd, POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(absl::ToInt64Milliseconds(kIoTimeout)));
    if (ready <= 0 || fds[1].revents != 0) return;  // idle client, error, or stopping
    const absl::Time deadline = absl::Now() + kIoTimeout;
    absl::StatusOr<std::string> frame = ReadFrame(fd, deadline);
    if (!frame.ok()) return;
    AdminRequest request;
    AdminResponse response;
    if (!request.ParseFromString(*frame)) {
      response.set_error("admin request does not parse");
    } else if (request.format() != kAdminFormat) {
      response.set_error(absl::StrCat("admin request format ", request.format(),
                                      " is not the supported ", kAdminFormat));
    } else {
      response = handler_(request);
    }
    response.set_format(kAdminFormat);
    std::string bytes;
    response.SerializeToString(&bytes);
    if (!WriteFrame(fd, bytes, deadline).ok() || !response.error().empty()) return;
  }
}

}  // namespace farm::node
