#include "absl/strings/str_format.h"
#include "membership/membership.h"

namespace farm::membership {

void ServingGate::Apply(const Configuration& config) {
  const Member* me = config.Find(self_);
  const bool member = me != nullptr && me->session == session_.load(std::memory_order_acquire);
  state_.store(config.epoch << 1 | (member ? 1 : 0), std::memory_order_release);
  if (member) fenced_.store(false, std::memory_order_release);  // rejoined
}

void ServingGate::ExtendLease(int64_t deadline_ns) {
  int64_t current = lease_deadline_ns_.load(std::memory_order_acquire);
  while (current < deadline_ns &&
         !lease_deadline_ns_.compare_exchange_weak(current, deadline_ns, std::memory_order_acq_rel)) {
  }
}

bool ServingGate::lease_held_at(int64_t now_ns) const {
  if (fenced_.load(std::memory_order_acquire)) return false;
  return now_ns < lease_deadline_ns_.load(std::memory_order_acquire);
}

bool ServingGate::serving_at(int64_t now_ns) const { return lease_held_at(now_ns) && member(); }

absl::Status ServingGate::Check(uint64_t request_epoch) const {
  if (!lease_held()) {
    return absl::UnavailableError(absl::StrFormat(
        "node %d is fenced: its lease ran out (ZooKeeper did not answer in time) or it left the cluster", self_));
  }
  const uint64_t state = state_.load(std::memory_order_acquire);
  const uint64_t epoch = state >> 1;
  if ((state & 1) == 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("node %d is not a member of epoch %d", self_, epoch));
  }
  if (request_epoch != epoch) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "request of epoch %d refused: node %d is in epoch %d", request_epoch, self_, epoch));
  }
  return absl::OkStatus();
}

}  // namespace farm::membership
