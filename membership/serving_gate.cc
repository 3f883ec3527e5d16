#include <chrono>

#include "absl/strings/str_format.h"
#include "membership/membership.h"

namespace farm::membership {
namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void ServingGate::Apply(const Configuration& config) {
  const Member* me = config.Find(self_);
  const bool member = me != nullptr && me->session == session_.load(std::memory_order_acquire);
  state_.store(config.epoch << 1 | (member ? 1 : 0), std::memory_order_release);
  if (member) fenced_.store(false, std::memory_order_release);  // rejoined
}

void ServingGate::LeaseLost() {
  int64_t expected = 0;
  // Keep the first loss: the lease runs out a grace after it, not after the latest.
  disconnected_ns_.compare_exchange_strong(expected, SteadyNowNs(), std::memory_order_acq_rel);
}

void ServingGate::LeaseHeld() { disconnected_ns_.store(0, std::memory_order_release); }

bool ServingGate::lease_held() const {
  if (fenced_.load(std::memory_order_acquire)) return false;
  const int64_t since = disconnected_ns_.load(std::memory_order_acquire);
  return since == 0 || SteadyNowNs() - since < grace_ns_.load(std::memory_order_relaxed);
}

bool ServingGate::serving() const { return lease_held() && member(); }

absl::Status ServingGate::Check(uint64_t request_epoch) const {
  if (!lease_held()) {
    return absl::UnavailableError(absl::StrFormat(
        "node %d is fenced: its ZooKeeper session is lost or it left the cluster", self_));
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
