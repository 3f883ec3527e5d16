// Socket helpers for the fabric backends: listening and connecting (TCP and Unix),
// bounded blocking I/O with deadlines, non-blocking I/O into ByteBuffers, and passing
// file descriptors over Unix sockets.
#ifndef FARM_FABRIC_SOCKET_UTIL_H_
#define FARM_FABRIC_SOCKET_UTIL_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/byte_buffer.h"

namespace farm {

// "host:port" or "[v6]:port"; host may be a name. Port 0 binds any free port.
absl::StatusOr<UniqueFd> ListenTcp(absl::string_view host_port);
absl::StatusOr<UniqueFd> ConnectTcp(absl::string_view host_port, absl::Time deadline);
// "host:port" of a bound socket (the port the kernel chose for port 0).
absl::StatusOr<std::string> LocalTcpAddress(int fd);

// A fabric's listening socket and the "host:port" peers reach it at.
struct PeerListener {
  UniqueFd fd;
  std::string address;
};
// Listens on `host_port` (empty: 127.0.0.1:0) for peers of `what` ("tcp fabric").
// InvalidArgument when it binds a wildcard address, which peers cannot be told.
absl::StatusOr<PeerListener> ListenTcpForPeers(absl::string_view host_port,
                                               absl::string_view what);

// Listens on a Unix socket path. An existing socket file nobody listens on (left by a
// crashed process) is replaced; one with a live listener is AlreadyExists.
absl::StatusOr<UniqueFd> ListenUnix(absl::string_view path);
absl::StatusOr<UniqueFd> ConnectUnix(absl::string_view path, absl::Time deadline);

absl::Status SetNonBlocking(int fd);
absl::Status SetNoDelay(int fd);

// Blocking-with-deadline I/O on a non-blocking socket. Unavailable when the peer closed
// or reset, DeadlineExceeded at the deadline.
absl::Status SendAll(int fd, const void* data, size_t n, absl::Time deadline);
absl::Status RecvAll(int fd, void* data, size_t n, absl::Time deadline);

// Sends `n` bytes (n > 0) with the given descriptors attached (SCM_RIGHTS). Blocking
// with deadline.
absl::Status SendWithFds(int fd, const void* data, size_t n, const std::vector<int>& fds,
                         absl::Time deadline);
// Receives exactly `n` bytes; descriptors that arrive with them are appended to `fds`.
absl::Status RecvWithFds(int fd, void* data, size_t n, std::vector<UniqueFd>* fds,
                         absl::Time deadline);

// Non-blocking: reads what is available into `in`. Returns the bytes read (0 when
// nothing was available), or Unavailable when the peer closed or the socket failed.
absl::StatusOr<size_t> ReadAvailable(int fd, ByteBuffer& in);
// Non-blocking: writes what the socket takes from `out`. OK when some or none was
// written (check out.empty()); Unavailable when the socket failed.
absl::Status WriteAvailable(int fd, ByteBuffer& out);

}  // namespace farm

#endif  // FARM_FABRIC_SOCKET_UTIL_H_
