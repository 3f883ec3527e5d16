// ShmPeer: what this process has mapped of one peer process (one instance of a peer
// fabric): its registration and doorbell tables, the regions mapped so far, and the
// eventfds of its doorbells. Shared by every endpoint to that peer instance, so each
// region is mapped once per process however many threads reach it.
//
// Thread-safe: endpoints on different threads look things up and add mappings. Lookups
// take a mutex, so endpoints keep their own unsynchronised caches in front of it.
// Mappings stay until the last endpoint to the peer is gone (a deregistered region's
// memory thus stays mapped here, but its ops fail the rkey check).
#ifndef FARM_FABRIC_SHM_SHM_PEER_H_
#define FARM_FABRIC_SHM_SHM_PEER_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "farm/base/mutex.h"
#include "farm/base/region.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/doorbell.h"
#include "farm/fabric/region_table.h"

namespace farm {

class ShmPeer {
 public:
  ShmPeer(uint64_t instance, Region region_table, uint32_t region_capacity, Region doorbells,
          uint32_t doorbell_capacity)
      : instance_(instance),
        region_table_(std::move(region_table)),
        region_capacity_(region_capacity),
        doorbells_(std::move(doorbells)),
        doorbell_capacity_(doorbell_capacity) {}

  uint64_t instance() const { return instance_; }

  // Length of the peer's region when `rkey` is currently valid for it, else 0.
  uint64_t ValidateRkey(RegionId region, uint64_t rkey) const {
    return farm::ValidateRkey(reinterpret_cast<const SharedRegionSlot*>(region_table_.base()),
                              region_capacity_, region, rkey);
  }

  // The mapping registered under `rkey`, or nullptr.
  const Region* FindRegion(uint64_t rkey) const;
  // Adds a mapping; if another endpoint added one for `rkey` first, returns that one.
  const Region* AddRegion(uint64_t rkey, Region region);

  // The eventfd of doorbell `id`, or -1 when not fetched yet.
  int FindDoorbellFd(uint32_t id) const;
  int AddDoorbellFd(uint32_t id, UniqueFd fd);

  // Rings the peer's doorbell `id` given its eventfd (doorbell.h invariant 2).
  void RingDoorbell(uint32_t id, int event_fd) const;
  uint32_t doorbell_capacity() const { return doorbell_capacity_; }

 private:
  const uint64_t instance_;
  const Region region_table_;
  const uint32_t region_capacity_;
  const Region doorbells_;
  const uint32_t doorbell_capacity_;
  mutable Mutex mu_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<Region>> regions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint32_t, UniqueFd> doorbell_fds_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm

#endif  // FARM_FABRIC_SHM_SHM_PEER_H_
