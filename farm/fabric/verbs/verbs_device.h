// VerbsDevice: an opened RDMA device, its protection domain, and the address of the
// port queue pairs use (LID for InfiniBand, a RoCEv2 GID for Ethernet).
//
// Device discovery copes with machines without RDMA: ibv_get_device_list returns NULL
// (errno ENOSYS) when the kernel has no RDMA support, and an empty list when it has
// support but no device; both mean "no device", never a crash.
#ifndef FARM_FABRIC_VERBS_VERBS_DEVICE_H_
#define FARM_FABRIC_VERBS_VERBS_DEVICE_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm {

// How a peer's queue pair reaches ours (exchanged when connecting).
struct VerbsPortAddress {
  uint16_t lid = 0;       // InfiniBand
  bool use_gid = false;   // RoCE: route by GID (global routing header)
  uint8_t gid_index = 0;
  ibv_gid gid{};
  ibv_mtu mtu = IBV_MTU_1024;
};

// Devices with at least one active port, by name; empty without RDMA.
std::vector<std::string> ActiveRdmaDevices();

class VerbsDevice {
 public:
  // Opens `name`, or the first device with an active port when `name` is empty.
  // `gid_index` < 0 picks a RoCEv2 GID with an IPv4-mapped address (else any RoCEv2,
  // else index 0) on Ethernet ports. Errors: NotFound (no such device, or none at all;
  // the message says which devices exist), Unavailable (port not active), or the
  // system's error.
  static absl::StatusOr<std::unique_ptr<VerbsDevice>> Open(absl::string_view name, int gid_index);
  ~VerbsDevice();
  VerbsDevice(const VerbsDevice&) = delete;
  VerbsDevice& operator=(const VerbsDevice&) = delete;

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  uint8_t port() const { return port_; }
  const VerbsPortAddress& address() const { return address_; }
  // The device's limits (max_qp_wr, max_cqe, max_mr_size, atomic_cap, ...).
  const ibv_device_attr& attr() const { return attr_; }
  // Soft-RoCE (rxe) or soft iWARP (siw): the "NIC" is the kernel copying with the CPU.
  bool is_software() const;
  // A line for logs: device, port, link layer, GID or LID, MTU.
  std::string Describe() const;

 private:
  VerbsDevice() = default;

  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  uint8_t port_ = 1;
  VerbsPortAddress address_;
  ibv_device_attr attr_{};
};

}  // namespace farm

#endif  // FARM_FABRIC_VERBS_VERBS_DEVICE_H_
