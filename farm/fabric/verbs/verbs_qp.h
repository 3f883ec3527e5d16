// Reliable-connected queue pairs: creation, the state changes that connect two of them,
// and the out-of-band frame that carries each side's address over the fabric's
// authenticated control socket.
//
// Connection (after the handshake of handshake.h on the control socket):
//   initiator -> target  kConnectRequest  its QP number, first PSN, LID/GID, MTU
//   target -> initiator  kConnectReply    the same for the target's new responder QP
// The target brings its QP to RTR/RTS before replying, so the initiator can send as
// soon as its own QP is RTS. Recovery after an error completion (which moves both QPs
// of an RC connection to the error state) repeats the exchange with kResetRequest /
// kResetReply on the same QPs with fresh PSNs.
#ifndef FARM_FABRIC_VERBS_VERBS_QP_H_
#define FARM_FABRIC_VERBS_VERBS_QP_H_

#include <infiniband/verbs.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/fabric/verbs/verbs_device.h"

namespace farm {

namespace verbs_wire {

inline constexpr uint32_t kMagic = 0x31425646;  // "FVB1"
inline constexpr uint8_t kVersion = 1;

enum Kind : uint8_t {
  kConnectRequest = 1,
  kConnectReply = 2,
  kResetRequest = 3,
  kResetReply = 4,
};

// Every control frame; fixed size, little-endian. A reply with status != 0 carries no
// address: the target could not create or reset its QP.
struct QpFrame {
  uint32_t magic;
  uint8_t kind;
  uint8_t version;
  uint8_t use_gid;
  uint8_t status;
  uint32_t qpn;
  uint32_t psn;
  uint16_t lid;
  uint8_t mtu;
  uint8_t reserved;
  uint8_t gid[16];
};
static_assert(sizeof(QpFrame) == 36);

QpFrame MakeFrame(Kind kind, uint32_t qpn, uint32_t psn, const VerbsPortAddress& address);
// InvalidArgument unless `frame` has the magic, version and `kind`.
absl::Status CheckFrame(const QpFrame& frame, Kind kind);

}  // namespace verbs_wire

// A random 24-bit packet sequence number.
uint32_t RandomPsn();

struct RcQpConfig {
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
  ibv_srq* srq = nullptr;  // responders receive WRITE-with-immediate wake-ups on it
  uint32_t max_send_wr = 1;
};
absl::StatusOr<ibv_qp*> CreateRcQp(const VerbsDevice& device, const RcQpConfig& config);

// RESET -> INIT -> RTR -> RTS, connected to the peer described by `remote`. The QP must
// be in RESET (new, or after ResetQp).
absl::Status ConnectRcQp(ibv_qp* qp, const VerbsDevice& device, uint32_t local_psn,
                         const verbs_wire::QpFrame& remote);
absl::Status ResetQp(ibv_qp* qp);
// Moves the QP to the error state: its outstanding requests complete as flushed.
absl::Status FailQp(ibv_qp* qp);

}  // namespace farm

#endif  // FARM_FABRIC_VERBS_VERBS_QP_H_
