#include "alloc/epoch.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace farm::alloc {

using epoch_internal::kIdle;
using epoch_internal::Slot;

// --- EpochParticipant ---

EpochParticipant::EpochParticipant(EpochParticipant&& other) noexcept
    : manager_(std::exchange(other.manager_, nullptr)),
      slot_(std::exchange(other.slot_, nullptr)),
      depth_(std::exchange(other.depth_, 0)),
      published_(std::exchange(other.published_, kIdle)) {}

EpochParticipant& EpochParticipant::operator=(EpochParticipant&& other) noexcept {
  if (this != &other) {
    Release();
    manager_ = std::exchange(other.manager_, nullptr);
    slot_ = std::exchange(other.slot_, nullptr);
    depth_ = std::exchange(other.depth_, 0);
    published_ = std::exchange(other.published_, kIdle);
  }
  return *this;
}

EpochParticipant::~EpochParticipant() { Release(); }

size_t EpochParticipant::slot_index() const { return manager_->IndexOf(slot_); }

void EpochParticipant::Release() {
  if (manager_ == nullptr) return;
  if (depth_ > 0) {
    depth_ = 1;
    Exit();
  }
  manager_->Unregister(*slot_);
  manager_ = nullptr;
  slot_ = nullptr;
}

// --- EpochManager ---

EpochManager::EpochManager(size_t capacity)
    : capacity_(capacity), slots_(std::make_unique<Slot[]>(capacity)) {}

// Pending waiters are dropped with waiters_, without running (see the header).
EpochManager::~EpochManager() = default;

absl::StatusOr<EpochParticipant> EpochManager::Register() {
  for (size_t i = 0; i < capacity_; ++i) {
    Slot& slot = slots_[i];
    bool expected = false;
    if (slot.registered.load(std::memory_order_relaxed) ||
        !slot.registered.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      continue;
    }
    // seq_cst, as the check's load of high_water_: a check that does not see this slot
    // advanced the epoch before this participant's first Enter reloads it (invariant 2).
    size_t high = high_water_.load(std::memory_order_seq_cst);
    while (high < i + 1 &&
           !high_water_.compare_exchange_weak(high, i + 1, std::memory_order_seq_cst)) {
    }
    registered_.fetch_add(1, std::memory_order_relaxed);
    return EpochParticipant(this, &slot);
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("all ", capacity_, " epoch participant slots are registered"));
}

void EpochManager::Unregister(Slot& slot) {
  registered_.fetch_sub(1, std::memory_order_relaxed);
  slot.registered.store(false, std::memory_order_release);
}

void EpochManager::AwaitQuiescence(EventLoop* loop, absl::AnyInvocable<void()> done) {
  {
    MutexLock lock(&mu_);
    // Advancing under mu_ keeps waiters_ sorted by target (invariant 3).
    const uint64_t target = epoch_.fetch_add(1, std::memory_order_seq_cst) + 1;
    waiters_.push_back(Waiter{target, loop, std::move(done)});
    pending_target_.store(target, std::memory_order_seq_cst);  // before the check (inv. 4)
  }
  CheckWaiters();
}

uint64_t EpochManager::OldestActiveEpoch() const {
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  const size_t end = high_water_.load(std::memory_order_seq_cst);
  for (size_t i = 0; i < end; ++i) {
    const uint64_t state = slots_[i].state.load(std::memory_order_seq_cst);
    if (state != kIdle) oldest = std::min(oldest, state);
  }
  return oldest;
}

void EpochManager::CheckWaiters() {
  std::vector<Waiter> ready;
  {
    MutexLock lock(&mu_);
    if (waiters_.empty()) return;
    const uint64_t oldest = OldestActiveEpoch();
    while (!waiters_.empty() && waiters_.front().target <= oldest) {
      ready.push_back(std::move(waiters_.front()));
      waiters_.pop_front();
    }
    if (waiters_.empty()) pending_target_.store(0, std::memory_order_seq_cst);
  }
  for (Waiter& waiter : ready) waiter.loop->Post(std::move(waiter.done));
}

size_t EpochManager::active_participants() const {
  size_t active = 0;
  const size_t end = high_water_.load(std::memory_order_acquire);
  for (size_t i = 0; i < end; ++i) {
    if (slots_[i].state.load(std::memory_order_acquire) != kIdle) ++active;
  }
  return active;
}

size_t EpochManager::pending_waiters() const {
  MutexLock lock(&mu_);
  return waiters_.size();
}

}  // namespace farm::alloc
