#include "farm/node/admin_protocol.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/fabric/socket_util.h"

namespace farm::node {

absl::Status WriteFrame(int fd, absl::string_view payload, absl::Time deadline) {
  if (payload.size() > kMaxAdminFrame) {
    return absl::InvalidArgumentError(absl::StrFormat("admin frame of %d bytes", payload.size()));
  }
  const uint32_t n = static_cast<uint32_t>(payload.size());
  unsigned char header[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                             static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
  if (absl::Status s = SendAll(fd, header, sizeof(header), deadline); !s.ok()) return s;
  return SendAll(fd, payload.data(), payload.size(), deadline);
}

absl::StatusOr<std::string> ReadFrame(int fd, absl::Time deadline) {
  unsigned char header[4];
  if (absl::Status s = RecvAll(fd, header, sizeof(header), deadline); !s.ok()) return s;
  const uint32_t n = header[0] | header[1] << 8 | header[2] << 16 | static_cast<uint32_t>(header[3]) << 24;
  if (n > kMaxAdminFrame) {
    return absl::DataLossError(absl::StrFormat("admin frame of %d bytes exceeds %d", n, kMaxAdminFrame));
  }
  std::string payload(n, '\0');
  if (absl::Status s = RecvAll(fd, payload.data(), n, deadline); !s.ok()) return s;
  return payload;
}

absl::StatusOr<AdminResponse> AdminCall(absl::string_view address, const AdminRequest& request,
                                        absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<UniqueFd> fd = ConnectTcp(address, deadline);
  if (!fd.ok()) return fd.status();
  std::string bytes;
  request.SerializeToString(&bytes);
  if (absl::Status s = WriteFrame(fd->get(), bytes, deadline); !s.ok()) return s;
  absl::StatusOr<std::string> reply = ReadFrame(fd->get(), deadline);
  if (!reply.ok()) return reply.status();
  AdminResponse response;
  if (!response.ParseFromString(*reply)) {
    return absl::DataLossError(absl::StrCat("admin response from ", address, " does not parse"));
  }
  if (response.format() != kAdminFormat) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "admin response format %d from %s, expected %d", response.format(), address, kAdminFormat));
  }
  if (!response.error().empty()) {
    return absl::UnknownError(absl::StrCat(address, ": ", response.error()));
  }
  return response;
}

}  // namespace farm::node
