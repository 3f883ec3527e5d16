// RecentCommits: the distributed transactions this node committed lately (as a backup
// or a primary, by their coordinator's decision or by recovery's), so that failover
// recovery can ask "did any surviving replica commit T?" after the replica dropped T's
// record (failover.h has the rule). Node-wide: a transaction's records live on one
// worker thread, but the question may arrive on any.
//
// Bounded by age, not count: an id is remembered for at least `keep` and at most twice
// that (two generations, the older dropped whole when the newer is `keep` old). The
// bound must exceed the time from a commit at one replica to the moment recovery asks
// about the same transaction: the coordinator's remaining decisions (rpc_timeout each)
// plus the failure's detection (the session timeout) and the new configuration's
// publication.
//
// Thread safety: any thread (a mutex; touched once per distributed commit and per
// recovery question, never by single-machine commits or reads).
#ifndef FARM_TX_RECENT_COMMITS_H_
#define FARM_TX_RECENT_COMMITS_H_

#include <cstdint>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "farm/base/mutex.h"

namespace farm::tx {

class RecentCommits {
 public:
  explicit RecentCommits(absl::Duration keep = absl::Seconds(60)) : keep_(keep) {}

  void Add(uint64_t transaction, absl::Time now = absl::Now());
  bool Contains(uint64_t transaction) const;
  size_t size() const;

 private:
  const absl::Duration keep_;
  mutable Mutex mu_;
  absl::flat_hash_set<uint64_t> current_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> previous_ ABSL_GUARDED_BY(mu_);
  absl::Time current_since_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace farm::tx

#endif  // FARM_TX_RECENT_COMMITS_H_
