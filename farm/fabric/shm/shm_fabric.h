// ShmFabric: the fabric backend for nodes on one host.
//
// Regions are memfds; a peer maps them (descriptors passed over an authenticated Unix
// socket) and executes READ, WRITE, CAS and FETCH_ADD itself on its mapping, so the
// owner's CPU is not involved. The owner's registration table is shared memory too, so
// every op is checked against the owner's current registration (rkey and bounds).
// Doorbells are rung by the initiator directly (shared armed word + passed eventfd).
//
// The owner's server thread only authenticates connections and hands out descriptors;
// a control connection's hang-up tells the initiator that the owner is gone.
#ifndef FARM_FABRIC_SHM_SHM_FABRIC_H_
#define FARM_FABRIC_SHM_SHM_FABRIC_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "farm/base/mutex.h"
#include "farm/fabric/shm/shm_peer.h"
#include "farm/fabric/socket_fabric.h"

namespace farm {

class ShmFabric final : public SocketFabric {
 public:
  static absl::StatusOr<std::unique_ptr<ShmFabric>> Create(const FabricOptions& options);
  ~ShmFabric() override;

  absl::string_view backend() const override { return "shm"; }
  std::string locator() const override { return "shm:" + options().listen_address; }
  absl::StatusOr<Connection> Connect(absl::string_view locator, absl::string_view hello,
                                     CompletionQueue* cq, uint64_t context) override;

  // Used by the server thread: the registered region's memfd and length when `rkey` is
  // its current key; -1 otherwise. The instance id peers use to tell this process from
  // a restarted one at the same path.
  int RegionFd(RegionId region, uint64_t rkey, uint64_t* length) const;
  uint64_t instance() const { return instance_; }

 private:
  ShmFabric(const FabricOptions& options, ClusterKey key);
  absl::StatusOr<UniqueFd> OpenSocket(absl::string_view address, absl::Time deadline) override;
  void OnRegistered(const Region& region) override;
  void OnDeregistered(RegionId region) override;
  std::shared_ptr<ShmPeer> FindOrAddPeer(uint64_t instance, Region region_table,
                                         uint32_t region_capacity, Region doorbells,
                                         uint32_t doorbell_capacity);

  const uint64_t instance_;
  mutable Mutex mu_;
  absl::flat_hash_map<RegionId, int> region_fds_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::weak_ptr<ShmPeer>> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm

#endif  // FARM_FABRIC_SHM_SHM_FABRIC_H_
