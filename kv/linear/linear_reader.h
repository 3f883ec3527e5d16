// LinearReader: one worker thread's lock-free lookups in the linear-probing table
// (kv/linear/linear_ops.h has the invariants they rely on). A lookup READs R
// consecutive slots from the key's home per round trip (the groups that hold them, as
// one lockFreeReadMany per run of at most 8 groups of one shard, all issued together),
// scans them in probe order, and stops at the key or at the first empty slot; if
// neither is among them it READs the next R slots, up to ProbeMap::max_probe() slots.
// R is the read-size model's for the client's current load estimate, or fixed
// (kv/linear/read_size_model.h).
//
// Linearizability. Each group copy is consistent on its own (the object read rule), so
// every slot is read atomically at some instant within the lookup.
//   - Found (k, v) in slot p at instant t: at t the table held k -> v (a key is in at
//     most one slot, invariant 1), and t lies within the lookup.
//   - Out of line: the slot's value object is read after the slot; values are never
//     modified (invariant 5), so if the object still has the slot's incarnation its
//     bytes are the value the slot named at its instant; if it was freed or reused
//     (FailedPrecondition) the lookup restarts.
//   - Absent: suppose k were present at every instant of the lookup. By invariant 2 it
//     sat in one slot p all that time, and by invariants 1 and 3 every slot from its
//     home to p was non-empty all that time (a slot becomes empty only when the slot
//     after it is; none between the home and p can be). So the lookup, which stops only
//     at an empty slot or after max_probe slots (p lies within them, invariant 4),
//     read p at some instant and saw k. Hence k was absent at some instant within the
//     lookup: linearize there.
// No lookup ever restarts because of a concurrent insert or remove of another key
// (nothing moves), only for a replaced out-of-line value.
//
// Load estimate. Every kSampleEvery lookups the reader READs one group at random and
// records its non-empty slots (LoadEstimate); SampleLoad refreshes it at once. These
// READs count in stats() (they are what the variable read size costs).
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// reader and the table must outlive the lookups in flight (and SampleLoad); a periodic
// sample still in flight when the reader goes is dropped. Lookup states are pooled
// (their key and round buffers are reused; a periodic sample allocates its LockFreeOp,
// once per kSampleEvery lookups); lockFreeReadMany's continuation wrapper still
// allocates once per READ.
#ifndef FARM_KV_LINEAR_LINEAR_READER_H_
#define FARM_KV_LINEAR_LINEAR_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/farm.h"
#include "kv/kv_client.h"
#include "kv/lookup_pool.h"
#include "kv/linear/linear_table.h"

namespace farm::kv::linear {

// The reader's own figures, beyond LookupStats.
struct ProbeStats {
  uint64_t rounds = 0;         // round trips of lookups (each one or more READs)
  uint64_t slots_read = 0;     // slots the lookups' READs fetched
  uint64_t slots_probed = 0;   // slots the lookups examined
  uint64_t sample_reads = 0;   // load-estimate READs (also in LookupStats::reads)
  uint64_t value_reads = 0;    // out-of-line value READs
};

class LinearReader {
 public:
  // A lookup gives up after this many restarts (DeadlineExceeded).
  static constexpr uint32_t kMaxRestarts = 64;
  static constexpr uint32_t kSampleEvery = 64;

  LinearReader(Context& ctx, std::shared_ptr<const LinearTable> table);
  ~LinearReader();
  LinearReader(const LinearReader&) = delete;
  LinearReader& operator=(const LinearReader&) = delete;

  void Get(absl::string_view key, GetDone done);
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done);
  // Reads `groups` groups at random now (a few at a time) and records them in the load
  // estimate; `done` runs when all have been read (the first error, if any).
  void SampleLoad(uint32_t groups, Done<absl::Status> done);

  // The read size a lookup starting now would use.
  uint32_t read_size() const { return table_->read_sizes.For(load_.load()); }
  double load_estimate() const { return load_.load(); }
  const LookupStats& stats() const { return stats_; }
  const ProbeStats& probe_stats() const { return probe_; }

 private:
  struct Lookup;
  struct Sample;

  void StartRound(Lookup* l);
  void OnRead(Lookup* l, size_t run, absl::StatusOr<std::span<const LockFreeObject>> r);
  void Scan(Lookup* l);
  void Continue(Lookup* l);
  void OnValue(Lookup* l, absl::StatusOr<LockFreeObject> r);
  void Restart(Lookup* l, absl::string_view why);
  void IssueSample(Done<absl::Status> done);
  struct SampleBatch;
  // Issues the batch's next sample; its completion issues the one after.
  void IssueFromBatch(std::shared_ptr<SampleBatch> batch);

  Context& ctx_;
  const std::shared_ptr<const LinearTable> table_;
  const ProbeMap& map_;
  LookupPool<Lookup> pool_;
  LoadEstimate load_;
  uint32_t since_sample_ = 0;
  bool sampling_ = false;  // a periodic sample is in flight
  absl::BitGen rng_;
  LookupStats stats_;
  // Expires with the reader (its samples' continuations check it).
  std::shared_ptr<LinearReader*> alive_;
  ProbeStats probe_;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_READER_H_
