#include "farm/fabric/shm/shm_peer.h"

namespace farm {

const Region* ShmPeer::FindRegion(uint64_t rkey) const {
  MutexLock lock(&mu_);
  auto it = regions_.find(rkey);
  return it == regions_.end() ? nullptr : it->second.get();
}

const Region* ShmPeer::AddRegion(uint64_t rkey, Region region) {
  MutexLock lock(&mu_);
  auto [it, inserted] = regions_.try_emplace(rkey, nullptr);
  if (inserted) it->second = std::make_unique<Region>(std::move(region));
  return it->second.get();
}

int ShmPeer::FindDoorbellFd(uint32_t id) const {
  MutexLock lock(&mu_);
  auto it = doorbell_fds_.find(id);
  return it == doorbell_fds_.end() ? -1 : it->second.get();
}

int ShmPeer::AddDoorbellFd(uint32_t id, UniqueFd fd) {
  MutexLock lock(&mu_);
  auto [it, inserted] = doorbell_fds_.try_emplace(id, std::move(fd));
  return it->second.get();
}

void ShmPeer::RingDoorbell(uint32_t id, int event_fd) const {
  if (id >= doorbell_capacity_) return;
  farm::RingDoorbell(reinterpret_cast<DoorbellSlot*>(doorbells_.base())[id], event_fd);
}

}  // namespace farm
