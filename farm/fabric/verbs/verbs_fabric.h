// VerbsFabric: the verbs backend — rdma-core RC queue pairs on a real (or Soft-RoCE)
// RDMA device.
//
// Regions are registered with the device once (ibv_reg_mr; the capability carries the
// rkey and the region's virtual address), and one-sided ops are served by the NIC
// without the target's CPU. Connection set-up is out of band: a TCP control socket per
// endpoint runs the same authenticated handshake as the CPU backends (handshake.h),
// then exchanges queue-pair addresses (verbs_qp.h). The socket stays open: its closing
// is how an idle endpoint learns its peer is gone, and it carries the reset exchange
// after an error completion.
//
// Threads: the FabricServer thread accepts control connections and creates responder
// QPs; the doorbell receiver's thread turns WRITE-with-immediate arrivals into doorbell
// rings. Both block when idle.
//
// Differences from the CPU backends a caller can see: the NIC checks a capability's
// rkey and address range but not its region id (not on the wire); `torn` is always
// false; registration pins the region's memory (so a 2 GB region is committed at
// registration unless the device does on-demand paging, which is then used).
#ifndef FARM_FABRIC_VERBS_VERBS_FABRIC_H_
#define FARM_FABRIC_VERBS_VERBS_FABRIC_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "farm/base/mutex.h"
#include "farm/fabric/doorbell.h"
#include "farm/fabric/fabric.h"
#include "farm/fabric/handshake.h"
#include "farm/fabric/verbs/verbs_device.h"
#include "farm/fabric/verbs/verbs_doorbell_receiver.h"
#include "farm/fabric/verbs/verbs_server.h"

namespace farm {

class VerbsFabric final : public Fabric {
 public:
  // Opens options.device (or the first active one), binds the control listener
  // (listen_address "host:port", default 127.0.0.1:0). NotFound without a device.
  static absl::StatusOr<std::unique_ptr<VerbsFabric>> Create(const FabricOptions& options);
  ~VerbsFabric() override;

  absl::string_view backend() const override { return "verbs"; }
  std::string locator() const override { return "verbs:" + address_; }
  absl::StatusOr<RegisteredRegion> RegisterRegion(const Region& region) override;
  absl::Status DeregisterRegion(RegionId region) override;
  bool PinsRegisteredMemory() const override { return (access_flags_ & IBV_ACCESS_ON_DEMAND) == 0; }
  bool WritesLandInAddressOrder() const override { return !device_->is_software(); }
  absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCompletionQueue() override;
  absl::StatusOr<std::unique_ptr<Doorbell>> CreateDoorbell() override;
  absl::Status Listen(AcceptHandler handler) override;
  absl::StatusOr<Connection> Connect(absl::string_view locator, absl::string_view hello,
                                     CompletionQueue* cq, uint64_t context) override;

  const VerbsDevice& device() const { return *device_; }

 private:
  VerbsFabric(const FabricOptions& options, ClusterKey key) : options_(options), key_(key) {}

  const FabricOptions options_;
  const ClusterKey key_;
  std::string address_;
  int access_flags_ = 0;
  std::unique_ptr<VerbsDevice> device_;
  std::unique_ptr<DoorbellTable> doorbells_;
  std::unique_ptr<VerbsDoorbellReceiver> receiver_;
  std::unique_ptr<VerbsServer> server_;
  Mutex mu_;
  absl::flat_hash_map<RegionId, ibv_mr*> regions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm

#endif  // FARM_FABRIC_VERBS_VERBS_FABRIC_H_
