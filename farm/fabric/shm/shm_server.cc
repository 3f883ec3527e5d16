#include "farm/fabric/shm/shm_server.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "farm/fabric/shm/shm_fabric.h"
#include "farm/fabric/shm/shm_wire.h"
#include "farm/fabric/socket_util.h"

namespace farm {

using shm_wire::Request;
using shm_wire::RequestFrame;
using shm_wire::ResponseFrame;

absl::Status ShmServer::ProcessInput(Conn& conn) {
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  // Earlier output (the accept frame) goes first.
  if (absl::Status s = SendAll(conn.fd.get(), conn.out.data(), conn.out.size(), deadline);
      !s.ok()) {
    return s;
  }
  conn.out.Clear();
  while (conn.in.size() >= sizeof(RequestFrame)) {
    RequestFrame req;
    std::memcpy(&req, conn.in.data(), sizeof(req));
    conn.in.Consume(sizeof(req));
    ResponseFrame resp{};
    resp.type = req.type;
    std::vector<int> fds;
    switch (static_cast<Request>(req.type)) {
      case Request::kGetTables:
        resp.value = fabric_->instance();
        resp.value2 = fabric_->regions().capacity();
        resp.value3 = fabric_->doorbells().capacity();
        fds = {fabric_->regions().shared_memory().fd(), fabric_->doorbells().shared_slots().fd()};
        break;
      case Request::kMapRegion:
        if (const int fd = fabric_->RegionFd(req.arg32, req.arg64, &resp.value); fd >= 0) {
          fds = {fd};
        } else {
          resp.status = static_cast<uint32_t>(absl::StatusCode::kPermissionDenied);
        }
        break;
      case Request::kGetDoorbell:
        if (const int fd = fabric_->doorbells().event_fd(req.arg32); fd >= 0) {
          fds = {fd};
        } else {
          resp.status = static_cast<uint32_t>(absl::StatusCode::kNotFound);
        }
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrFormat("unknown shm control request %u", req.type));
    }
    resp.fd_count = static_cast<uint32_t>(fds.size());
    if (absl::Status s = SendWithFds(conn.fd.get(), &resp, sizeof(resp), fds, deadline); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace farm
