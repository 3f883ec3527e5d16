#include "membership/membership.h"

#include "absl/strings/str_format.h"

namespace farm::membership {

void ServingGate::Apply(const Configuration& config) {
  member_.store(config.Contains(self_), std::memory_order_release);
  epoch_.store(config.epoch, std::memory_order_release);
}

void ServingGate::LeaseLost(absl::Time since) {
  int64_t expected = 0;
  // Keep the first loss: the lease runs out a timeout after it, not after the latest.
  disconnected_ns_.compare_exchange_strong(expected, absl::ToUnixNanos(since),
                                           std::memory_order_acq_rel);
}

void ServingGate::LeaseHeld() { disconnected_ns_.store(0, std::memory_order_release); }

bool ServingGate::lease_held() const {
  if (fenced_.load(std::memory_order_acquire)) return false;
  const int64_t since = disconnected_ns_.load(std::memory_order_acquire);
  return since == 0 ||
         absl::ToUnixNanos(absl::Now()) - since < lease_timeout_ns_.load(std::memory_order_relaxed);
}

bool ServingGate::serving() const { return lease_held() && member(); }

absl::Status ServingGate::Check(uint64_t request_epoch) const {
  if (!lease_held()) {
    return absl::UnavailableError(
        absl::StrFormat("node %d is fenced: its ZooKeeper session is lost", self_));
  }
  const uint64_t epoch = this->epoch();
  if (!member()) {
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
