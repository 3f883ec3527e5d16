// Framing of the admin port: [u32 little-endian length][protobuf]. Shared by the
// node's AdminServer and the tools' client. Frames over kMaxAdminFrame are refused.
#ifndef FARM_NODE_ADMIN_PROTOCOL_H_
#define FARM_NODE_ADMIN_PROTOCOL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/node/admin.pb.h"

namespace farm::node {

inline constexpr uint32_t kAdminFormat = 1;
inline constexpr uint32_t kMaxAdminFrame = 1u << 20;

// Frame I/O on a socket, bounded by `deadline`.
absl::Status WriteFrame(int fd, absl::string_view payload, absl::Time deadline);
absl::StatusOr<std::string> ReadFrame(int fd, absl::Time deadline);

// Connects to `address` (host:port), sends `request`, returns the response. Errors:
// Unavailable (cannot connect), DeadlineExceeded, DataLoss (bad frame), or the
// error the node reported.
absl::StatusOr<AdminResponse> AdminCall(absl::string_view address, const AdminRequest& request,
                                        absl::Duration timeout = absl::Seconds(3));

}  // namespace farm::node

#endif  // FARM_NODE_ADMIN_PROTOCOL_H_
