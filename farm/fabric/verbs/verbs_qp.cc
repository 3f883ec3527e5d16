#include "farm/fabric/verbs/verbs_qp.h"

#include <sodium.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

namespace farm {
namespace verbs_wire {

QpFrame MakeFrame(Kind kind, uint32_t qpn, uint32_t psn, const VerbsPortAddress& address) {
  QpFrame f{};
  f.magic = kMagic;
  f.kind = kind;
  f.version = kVersion;
  f.use_gid = address.use_gid ? 1 : 0;
  f.qpn = qpn;
  f.psn = psn;
  f.lid = address.lid;
  f.mtu = static_cast<uint8_t>(address.mtu);
  std::memcpy(f.gid, address.gid.raw, sizeof(f.gid));
  return f;
}

absl::Status CheckFrame(const QpFrame& frame, Kind kind) {
  if (frame.magic != kMagic) return absl::InvalidArgumentError("verbs control frame: bad magic");
  if (frame.version != kVersion) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "verbs control frame: protocol version %d, this node speaks %d", frame.version, kVersion));
  }
  if (frame.kind != kind) {
    return absl::InvalidArgumentError(
        absl::StrFormat("verbs control frame: kind %d where %d was expected", frame.kind, kind));
  }
  if (frame.mtu < IBV_MTU_256 || frame.mtu > IBV_MTU_4096) {
    return absl::InvalidArgumentError(absl::StrFormat("verbs control frame: mtu code %d", frame.mtu));
  }
  return absl::OkStatus();
}

}  // namespace verbs_wire

namespace {

constexpr int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
// Outstanding READs and atomics per QP, each way (bounded by the device).
constexpr int kReadAtomicDepth = 16;

absl::Status Modify(ibv_qp* qp, ibv_qp_attr& attr, int mask, const char* to) {
  const int rc = ibv_modify_qp(qp, &attr, mask);
  if (rc != 0) {
    return absl::ErrnoToStatus(rc, absl::StrFormat("ibv_modify_qp %u to %s", qp->qp_num, to));
  }
  return absl::OkStatus();
}

}  // namespace

uint32_t RandomPsn() { return randombytes_uniform(1u << 24); }

absl::StatusOr<ibv_qp*> CreateRcQp(const VerbsDevice& device, const RcQpConfig& config) {
  ibv_qp_init_attr init{};
  init.send_cq = config.send_cq;
  init.recv_cq = config.recv_cq;
  init.srq = config.srq;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = std::max<uint32_t>(1, config.max_send_wr);
  init.cap.max_recv_wr = config.srq != nullptr ? 0 : 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(device.pd(), &init);
  if (qp == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("ibv_create_qp (send queue %u) on %s",
                                                      config.max_send_wr, device.name()));
  }
  return qp;
}

absl::Status ConnectRcQp(ibv_qp* qp, const VerbsDevice& device, uint32_t local_psn,
                         const verbs_wire::QpFrame& remote) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = device.port();
  attr.qp_access_flags = kAccess;
  if (absl::Status s = Modify(qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                            IBV_QP_ACCESS_FLAGS, "INIT");
      !s.ok()) {
    return s;
  }

  const VerbsPortAddress& local = device.address();
  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(local.mtu, static_cast<ibv_mtu>(remote.mtu));
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = static_cast<uint8_t>(
      std::clamp(device.attr().max_qp_init_rd_atom, 1, kReadAtomicDepth));
  attr.min_rnr_timer = 12;  // 0.64 ms
  attr.ah_attr.dlid = remote.lid;
  attr.ah_attr.port_num = device.port();
  if (remote.use_gid) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, sizeof(remote.gid));
    attr.ah_attr.grh.sgid_index = local.gid_index;
    attr.ah_attr.grh.hop_limit = 64;
  }
  if (absl::Status s = Modify(qp, attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                            IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                              "RTR");
      !s.ok()) {
    return s;
  }

  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = local_psn;
  attr.timeout = 14;    // 4.096 us * 2^14 = 67 ms before a retry
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;   // receiver-not-ready: retry forever (a doorbell's SRQ refills)
  attr.max_rd_atomic = static_cast<uint8_t>(
      std::clamp(device.attr().max_qp_rd_atom, 1, kReadAtomicDepth));
  return Modify(qp, attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
                "RTS");
}

absl::Status ResetQp(ibv_qp* qp) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RESET;
  return Modify(qp, attr, IBV_QP_STATE, "RESET");
}

absl::Status FailQp(ibv_qp* qp) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  return Modify(qp, attr, IBV_QP_STATE, "ERR");
}

}  // namespace farm
