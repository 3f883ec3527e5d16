#include "farm/fabric/doorbell.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace farm {

void RingDoorbell(DoorbellSlot& slot, int event_fd) {
  // Invariant 2: the ringer's work is already visible; the fence orders it before the
  // load of `armed` (pairs with the fence in Doorbell::Arm).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (slot.armed.load(std::memory_order_relaxed) == 0) return;
  const uint64_t one = 1;
  // EAGAIN means the counter is saturated: the waiter will wake anyway.
  (void)!::write(event_fd, &one, sizeof(one));
}

Doorbell::~Doorbell() { table_->Release(id_); }

void Doorbell::Arm() {
  slot_->armed.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Doorbell::Disarm() {
  slot_->armed.store(0, std::memory_order_relaxed);
  uint64_t count;
  (void)!::read(event_fd_, &count, sizeof(count));
}

void Doorbell::Ring() { RingDoorbell(*slot_, event_fd_); }

absl::StatusOr<std::unique_ptr<DoorbellTable>> DoorbellTable::Create(uint32_t capacity) {
  if (capacity == 0) return absl::InvalidArgumentError("doorbell table capacity must be > 0");
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t bytes = (capacity * sizeof(DoorbellSlot) + page - 1) / page * page;
  absl::StatusOr<Region> region = Region::Create(kNullRegion, bytes, {HugePages::kNone});
  if (!region.ok()) return region.status();
  return std::unique_ptr<DoorbellTable>(new DoorbellTable(std::move(*region), capacity));
}

DoorbellTable::DoorbellTable(Region slots_region, uint32_t capacity)
    : slots_region_(std::move(slots_region)),
      capacity_(capacity),
      event_fds_(new std::atomic<int>[capacity]) {
  for (uint32_t i = 0; i < capacity; ++i) event_fds_[i].store(-1, std::memory_order_relaxed);
}

absl::StatusOr<std::unique_ptr<Doorbell>> DoorbellTable::Allocate() {
  MutexLock lock(&mu_);
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else if (next_id_ < capacity_) {
    id = next_id_;
    UniqueFd efd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!efd.valid()) return absl::ErrnoToStatus(errno, "eventfd");
    event_fds_[id].store(efd.get(), std::memory_order_release);
    owned_fds_.push_back(std::move(efd));
    ++next_id_;
  } else {
    return absl::ResourceExhaustedError(
        absl::StrFormat("all %u doorbells are in use (FabricOptions::max_doorbells)", capacity_));
  }
  slot(id).armed.store(0, std::memory_order_relaxed);
  return std::unique_ptr<Doorbell>(
      new Doorbell(this, id, &slot(id), event_fds_[id].load(std::memory_order_relaxed)));
}

void DoorbellTable::Release(uint32_t id) {
  MutexLock lock(&mu_);
  slot(id).armed.store(0, std::memory_order_relaxed);
  free_ids_.push_back(id);
}

void DoorbellTable::Ring(uint32_t id) {
  if (id >= capacity_) return;
  const int fd = event_fds_[id].load(std::memory_order_acquire);
  if (fd >= 0) RingDoorbell(slot(id), fd);
}

int DoorbellTable::event_fd(uint32_t id) const {
  if (id >= capacity_) return -1;
  return event_fds_[id].load(std::memory_order_acquire);
}

}  // namespace farm
