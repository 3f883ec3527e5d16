// RecoveryLocks: the locks failover recovery holds on the objects of a promoted region
// (a backup copy that became primary) that transactions in doubt prepared to write.
//
// The old primary's locks died with it. Before the region serves again, every object a
// transaction in doubt may still write is locked here (exclusively: lock-free readers
// retry and transactions abort on it), and stays locked until each such transaction is
// decided. Two transactions in doubt can name one object (backups keep a PREPARE even
// when the primary refused its lock; the refused one can never have committed), so a
// lock counts its holders: the object is unlocked when the last one is decided, at the
// version it was locked from — unless a holder committed, whose write published a new,
// unlocked version already (at most one holder of an object can commit).
//
// Thread safety: any thread (a mutex; used only while recovering).
#ifndef FARM_TX_RECOVERY_LOCKS_H_
#define FARM_TX_RECOVERY_LOCKS_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "farm/base/address.h"
#include "farm/base/mutex.h"

namespace farm::tx {

class RecoveryLocks {
 public:
  // One more holder of `object` (the stored object at `address`); the first locks it
  // from its current version. FailedPrecondition when the object is locked by someone
  // else (nothing may lock a promoted region's objects before recovery has).
  absl::Status Take(Addr address, char* object);
  // A holder is decided: `committed` when its write was applied (which unlocked the
  // object). The last holder unlocks an object nobody committed.
  void Drop(Addr address, bool committed);
  // Locks held on objects of `region` (re-replication waits for none).
  size_t HeldIn(RegionId region) const;
  size_t size() const;

 private:
  struct Held {
    char* object;
    uint64_t locked_from;
    uint32_t holders;
    bool committed;
  };
  mutable Mutex mu_;
  absl::flat_hash_map<uint64_t, Held> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::tx

#endif  // FARM_TX_RECOVERY_LOCKS_H_
