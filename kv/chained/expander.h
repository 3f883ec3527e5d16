// Expander: Mercury's incremental expansion of one machine's partitions (the
// partitions whose root this machine holds as primary; kv/chained/partition_map.h).
// An expansion of a partition of N buckets runs in three phases, each step a
// single-machine transaction on this machine, while lookups and updates go on:
//   initialization  allocates 2N zeroed buckets next to the root (runs of adjacent
//                   objects, kObjectsPerAllocTx per transaction) and their directory,
//                   then sets the root's next table;
//   re-hashing      migrates bucket b = 0, 1, ..., N-1 of the current table into buckets
//                   b and b + N of the next (MigrateBucketInTx: one transaction per
//                   bucket, retried on conflicts with updates); before each bucket it
//                   asks the hold hook, and waits while the hook says hold;
//   termination     makes the next table current (root), then frees the old table's
//                   heads and directory (never the initial table: the catalog's).
// Invariants and why lookups stay linearizable: kv/chained/chained_ops.h and
// kv/chained/chained_reader.h.
//
// Trigger: the primary counts its partitions' pairs from committed shipped updates
// (ChainedApplier); when a partition holds more than max_load pairs per bucket it
// expands (one expansion at a time per partition; the count is re-checked after each,
// so a fast-growing partition doubles again). Transactions run through BeginTxn are
// not counted (a partition filled only through them expands late), nor are pairs kept
// from before a restart.
//
// Threads: an expansion runs on the worker thread that started it (its continuations
// there); Note and Expand may be called from any worker thread; the state is atomic.
// An expansion's coroutine uses the Expander until it ends, and it needs the node's
// threads to end: the owner calls Stop (from a thread that is not a worker thread,
// while the node runs) before destroying the Expander (ChainedHost's destructor does).
// Stop ends the expansions at their next step boundary and waits for them; a
// partition left expanding resumes its migration on its next expansion.
#ifndef FARM_KV_CHAINED_EXPANDER_H_
#define FARM_KV_CHAINED_EXPANDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/sync.h"
#include "kv/chained/chained_ops.h"
#include "kv/chained/partition_map.h"

namespace farm::kv::chained {

// A test seam: asked before each bucket's migration (partition, bucket index, buckets
// of the current table); the expansion waits (polling every 50 us) while it returns
// true. Called on the expansion's thread.
using HoldHook = std::function<bool(uint32_t partition, uint64_t bucket, uint64_t buckets)>;

struct ExpanderOptions {
  double max_load = 1.0;  // pairs per bucket (current table) that start an expansion
  bool automatic = true;  // expand on the count; false: only on Expand
  HoldHook hold;
};

struct ExpansionStats {
  uint64_t expansions = 0;   // completed, on this machine
  uint64_t migrated = 0;     // buckets migrated
  uint64_t retries = 0;      // migration transactions retried after a conflict
  uint64_t freed_tables = 0;
};

class Expander {
 public:
  static constexpr uint32_t kObjectsPerAllocTx = 64;

  Expander(ChainedTable table, ExpanderOptions options);
  // Stops first (Stop): never with an expansion running.
  ~Expander();
  Expander(const Expander&) = delete;
  Expander& operator=(const Expander&) = delete;

  // A committed batch changed partition p's pairs by `delta` (ChainedApplier). Starts
  // no expansion once stopped.
  void Note(Context& ctx, uint32_t partition, int delta);
  // Runs one whole expansion of `partition` now (or finishes the one in progress),
  // on ctx's thread; FailedPrecondition when one is running on this machine already,
  // Cancelled once stopped (or when Stop ends it midway).
  void Expand(Context& ctx, uint32_t partition, Done<absl::Status> done);
  // Starts no more expansions, ends the running ones (Cancelled) at their next step
  // boundary: before a phase, between two buckets' migrations, while held by the hold
  // hook; never between allocating a table and naming it in the root, nor while freeing
  // one, so nothing leaks and the partition stays consistent (left expanding, its next
  // expansion resumes the migration). Returns once none runs (their done callbacks
  // have returned). From a thread that is not a worker thread, while the node runs
  // (the expansions' transactions need its threads). Idempotent.
  void Stop();

  uint32_t partitions() const { return static_cast<uint32_t>(state_.size()); }
  // An expansion of the partition runs on this machine (from its allocation on).
  bool expanding(uint32_t partition) const { return state_[partition]->running.load(); }
  ExpansionStats stats() const;

 private:
  struct PartitionState {
    std::atomic<int64_t> pairs{0};
    std::atomic<uint64_t> buckets{0};  // of the current table, as this machine last knew it
    std::atomic<bool> running{false};
  };

  // Counts an expansion about to be spawned: false (nothing counted) once stopped.
  bool Enter();
  // Its done callback's last step: the Expander is not used after it.
  void Leave();
  bool stopping() const { return stopping_.load(); }

  Task<absl::Status> Run(Context& ctx, uint32_t partition);
  Task<absl::Status> Start(Context& ctx, uint32_t partition);
  Task<absl::Status> Migrate(Context& ctx, uint32_t partition);
  Task<absl::Status> Finish(Context& ctx, uint32_t partition);
  bool Due(uint32_t partition) const;

  const ChainedTable table_;
  const ExpanderOptions options_;
  std::vector<std::unique_ptr<PartitionState>> state_;  // index = partition
  std::atomic<uint64_t> expansions_{0};
  std::atomic<uint64_t> migrated_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> freed_tables_{0};
  std::atomic<bool> stopping_{false};  // set under mu_, read by the expansions
  Mutex mu_;
  CondVar idle_;  // active_ reached 0
  int active_ ABSL_GUARDED_BY(mu_) = 0;  // expansions spawned and not yet done
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_EXPANDER_H_
