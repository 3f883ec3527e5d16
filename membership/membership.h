// Membership: where a node learns the configuration it works in, and whether it may
// serve at all.
//
// Two implementations: ZkMembership (ZooKeeper; production and integration tests) and
// StaticMembership (a fixed member list for unit tests and single-process clusters).
// The node picks one from its flags and never falls back from one to the other.
//
// Serving rule (ServingGate): a node serves a request only when (1) it holds its lease
// — its ZooKeeper session is connected, or was lost less than a session timeout ago —
// (2) it is a member of the newest configuration it applied, and (3) the request was
// issued in that configuration's epoch. A node fenced by (1) serves nothing until it
// has rejoined and applied a configuration that contains it again.
#ifndef FARM_MEMBERSHIP_MEMBERSHIP_H_
#define FARM_MEMBERSHIP_MEMBERSHIP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "membership/configuration.h"

namespace farm::membership {

// Lock-free check on every request (the transaction layer calls it per message).
class ServingGate {
 public:
  explicit ServingGate(NodeId self) : self_(self) {}

  // OK, or Unavailable (fenced: lease lost) or FailedPrecondition (not a member of the
  // current epoch, or `request_epoch` is another epoch). Any thread.
  absl::Status Check(uint64_t request_epoch) const;
  // Whether writes (and so any request) are accepted now: lease held and a member.
  bool serving() const;

  // Writers: the membership implementation.
  void Apply(const Configuration& config);
  void LeaseLost(absl::Time since);  // the session is not connected since `since`
  void LeaseHeld();
  void SetLeaseTimeout(absl::Duration timeout) { lease_timeout_ns_ = absl::ToInt64Nanoseconds(timeout); }
  void Fence() { fenced_.store(true, std::memory_order_release); }  // expired: until rejoin
  void Unfence() { fenced_.store(false, std::memory_order_release); }

  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  bool member() const { return member_.load(std::memory_order_acquire); }
  bool lease_held() const;

 private:
  const NodeId self_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<bool> member_{false};
  std::atomic<bool> fenced_{false};          // session expired: until rejoined
  std::atomic<int64_t> disconnected_ns_{0};  // absl::ToUnixNanos of the loss; 0: connected
  std::atomic<int64_t> lease_timeout_ns_{4'000'000'000};
};

struct MembershipStatus {
  std::string source;      // "zookeeper host:port" or "static"
  std::string session;     // ZooKeeper session state, "n/a" for static
  bool manager = false;    // this node publishes configurations
  bool serving = false;
  uint64_t epoch = 0;
  std::string last_error;  // the newest error (bad configuration, lost session...)
};

class Membership {
 public:
  // Called on the membership's own thread with each newer configuration, in epoch
  // order, after the gate reflects it. Must not block for long.
  using ConfigCallback = std::function<void(std::shared_ptr<const Configuration>)>;

  virtual ~Membership() = default;
  // Joins the cluster; returns once this node is registered (ZooKeeper) and the first
  // configuration is known, or with a clear error within the configured bounds.
  virtual absl::Status Start(ConfigCallback on_config) = 0;
  // Leaves: stops publishing and watching; with ZooKeeper, closes the session so the
  // others see this node go at once. Idempotent.
  virtual void Stop() = 0;
  virtual std::shared_ptr<const Configuration> current() const = 0;
  virtual MembershipStatus status() const = 0;
  virtual const ServingGate& gate() const = 0;
};

}  // namespace farm::membership

#endif  // FARM_MEMBERSHIP_MEMBERSHIP_H_
