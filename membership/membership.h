// Membership: where a node learns the configuration it works in, and whether it may
// serve at all.
//
// Two implementations: ZkMembership (ZooKeeper; production and integration tests) and
// StaticMembership (a fixed member list for unit tests and single-process clusters).
// The node picks one from its flags and never falls back from one to the other.
//
// Serving rule (ServingGate): a node serves a request only when (1) it holds its lease
// — a deadline before which the ZooKeeper server cannot have expired its session, timed
// from when the last answered heartbeat was *sent* (see ZkMembership) — (2) it is a member of
// the newest configuration it applied, with its current session, and (3) the request
// was issued in that configuration's epoch. A node whose session expired, or that left,
// serves nothing until it has rejoined and applied a configuration that contains it
// again.
#ifndef FARM_MEMBERSHIP_MEMBERSHIP_H_
#define FARM_MEMBERSHIP_MEMBERSHIP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "membership/configuration.h"
#include "membership/lease_clock.h"

namespace farm::membership {

// Lock-free check on every request (the transaction layer calls it per message).
//
// Membership is by session: a configuration counts this node as a member only when its
// entry carries the session this process registered with (`SetSession`; 0 for static
// membership), so a restarted process is never a member through its predecessor's
// entry. The epoch and the member bit change together (one atomic word).
class ServingGate {
 public:
  explicit ServingGate(NodeId self) : self_(self) {}

  // OK, or Unavailable (fenced: lease lost, or left) or FailedPrecondition (not a
  // member of the current epoch, or `request_epoch` is another epoch). Any thread.
  absl::Status Check(uint64_t request_epoch) const;
  // Whether requests are accepted now: lease held and a member.
  bool serving() const { return serving_at(LeaseClockNowNs()); }
  // The same at `now_ns`, a reading of the lease clock taken at the start of the work the
  // check admits (an event loop's iteration: one clock read serves every check in it).
  // The lease's margin (ZkMembership: T/4) covers the time from the reading to the end
  // of that work, as it covers the work after any check.
  bool serving_at(int64_t now_ns) const;

  // Writers: the membership implementation.
  void SetSession(uint64_t session) { session_.store(session, std::memory_order_release); }
  // Adopts `config`; a configuration with this node's current session also lifts a
  // fence set by Fence (the node has rejoined).
  void Apply(const Configuration& config);
  // The lease: held while the lease clock (membership/lease_clock.h) reads before the
  // deadline, in nanoseconds. A gate that is never given one holds it for good (static
  // membership); ZkMembership starts it at "not held". ExtendLease moves the deadline
  // later, never earlier, so renewals may come from any thread in any order and a late
  // one changes nothing. The caller's duty: a deadline no later than the earliest time
  // the lease's grantor may consider it over.
  void ExpireLease() { lease_deadline_ns_.store(0, std::memory_order_release); }
  void ExtendLease(int64_t deadline_ns);
  int64_t lease_deadline_ns() const { return lease_deadline_ns_.load(std::memory_order_acquire); }
  // Until a configuration with the current session is applied: session expired, or left.
  void Fence() { fenced_.store(true, std::memory_order_release); }

  uint64_t epoch() const { return state_.load(std::memory_order_acquire) >> 1; }
  bool member() const { return (state_.load(std::memory_order_acquire) & 1) != 0; }
  bool lease_held() const { return lease_held_at(LeaseClockNowNs()); }
  bool lease_held_at(int64_t now_ns) const;

 private:
  const NodeId self_;
  std::atomic<uint64_t> session_{0};
  std::atomic<uint64_t> state_{0};  // epoch << 1 | member
  std::atomic<bool> fenced_{false};
  std::atomic<int64_t> lease_deadline_ns_{INT64_MAX};
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
  // Called with each newer configuration it applies — epochs increase, possibly with
  // gaps (ZooKeeper watches report the latest value) — after the gate reflects it;
  // never concurrently: first on the thread running Start, then on the membership's
  // own thread. Must not block for long.
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
