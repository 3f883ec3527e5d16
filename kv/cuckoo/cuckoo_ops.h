// CuckooOps: Nessie's client-driven protocol on one worker thread (Szepesi et al.,
// "Designing a low-latency cuckoo hash table for write-intensive workloads using RDMA",
// and "Nessie: a decoupled, client-driven key-value store using RDMA", TPDS 2017): GET,
// PUT (and INCR), DELETE and MIGRATE, with ONLY the one-sided facet (farm/api/one_sided.h)
// — READs of ITEs and DTEs, WRITEs of the thread's own fresh DTEs, CAS on ITEs and on DTE
// state words. No machine's CPU runs anything for another machine's operation (on tcp,
// the software NIC's responder thread does).
//
// Invariants (on top of kv/cuckoo/entry_format.h's):
//   1. At most one ITE among a key's candidates names a *valid* DTE of that key; a second
//      one exists only transiently, naming an *invalid* DTE (a PUT between its ITE CAS
//      and its validation, or a MIGRATE's copy between its destination CAS and its
//      validation).
//   2. Every operation that meets an invalid DTE of its key backs off and starts again
//      (it never writes an ITE naming an invalid DTE it did not write), so the writer of
//      an invalid DTE is the only client that changes the ITE naming it: its rollbacks
//      (ITE CAS back to the old value) cannot fail.
//   3. A PUT installs its DTE with one CAS on the slot it read (the key's slot, else the
//      first empty candidate), then re-reads every other candidate in reverse order and
//      rolls back if any changed; it validates its DTE only after that. So a value is
//      visible only once it is the key's only entry.
//   4. GET: forward pass over the candidates (ITE READ, then the DTE READ when the filter
//      bits match); a valid DTE of the key is the answer (linearized at its ITE READ, or
//      at its validation if later); an invalid one alone (no valid one in the pass) means
//      back off and retry; no entry of the key means a reverse pass re-reading every ITE,
//      and "absent" only if none changed (a MIGRATE may have moved the key behind the
//      forward pass).
//   5. MIGRATE moves the pair in slot s to an empty alternative d of its key: copy into a
//      fresh invalid DTE, CAS d 0 -> copy, CAS s old -> 0 (else roll d back), validate
//      the copy, recycle the old DTE. Between the two CASes readers find the old valid
//      DTE in s; after, the invalid copy in d (they retry): never neither.
//   6. DELETE of a present key is one CAS of its slot (the valid DTE's ITE -> 0), its
//      linearization point; of an absent key, the GET reverse-pass check.
//   7. A DTE is recycled (state CAS to recycled) by the client whose CAS removed its ITE,
//      before that operation completes; the owning thread frees it (at once if it is
//      that client, else by EntryPool::Reclaim).
//
// Limits: a PUT that finds all candidates taken by other keys displaces one by MIGRATE,
// recursively up to max_displacement levels; past that, ResourceExhausted (the index
// needs more slots or fewer pairs). A thread that has no free DTE of the pair's size
// class after a reclaim scan: ResourceExhausted. Backoff retries are bounded
// (kMaxAttempts): past that, Aborted (e.g. a client crashed leaving an invalid DTE: the
// paper's server-side cleanup is not built).
//
// Threads: the owning worker thread; the CuckooOps must outlive its operations.
#ifndef FARM_KV_CUCKOO_CUCKOO_OPS_H_
#define FARM_KV_CUCKOO_CUCKOO_OPS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/cuckoo/cuckoo_map.h"
#include "kv/cuckoo/entry_pool.h"
#include "kv/key_ops.h"
#include "kv/kv_client.h"

namespace farm::kv::cuckoo {

struct CuckooLimits {
  uint32_t max_displacement = 4;  // MIGRATE recursion levels before ResourceExhausted
  uint32_t max_attempts = 20000;  // backoff retries of one operation before Aborted
};

// A thread's counts of its updates (the lookups' are in LookupStats).
struct UpdateStats {
  uint64_t updates = 0;
  uint64_t reads = 0;             // one-sided READs of PUT, INCR, DELETE and MIGRATE
  uint64_t bytes_read = 0;        // the bytes they returned
  uint64_t migrations = 0;        // pairs moved by MIGRATE
  uint64_t migration_aborts = 0;  // MIGRATEs rolled back or abandoned
  uint64_t rollbacks = 0;         // PUT ITE CASes undone by the reverse pass
  uint64_t retries = 0;           // update restarts (conflicts, invalid entries)
  uint64_t full = 0;              // ResourceExhausted answers
  uint64_t reclaims = 0;          // EntryPool::Reclaim scans
};

// The test seam: a MIGRATE pauses at each step until `resume` runs (on the owning
// thread: post it to the thread's Context).
enum class MigrationStep { kDestinationInstalled, kSourceCleared };
using MigrationHook = absl::AnyInvocable<void(MigrationStep step, absl::string_view key,
                                              absl::AnyInvocable<void()> resume)>;

class CuckooOps {
 public:
  // `slices`: the data entries this thread owns (CuckooHost::ClaimSlices).
  CuckooOps(Context& ctx, const CuckooMap& map, const std::vector<SliceRef>& slices,
            CuckooLimits limits)
      : ctx_(ctx),
        map_(map),
        pool_(map, slices),
        limits_(limits),
        jitter_(0x9e3779b97f4a7c15ull * (ctx.self() * 64 + ctx.thread_index() + 1)) {}
  CuckooOps(const CuckooOps&) = delete;
  CuckooOps& operator=(const CuckooOps&) = delete;

  // The key's value, or nullopt.
  Task<absl::StatusOr<std::optional<std::string>>> Get(std::string key);
  // kPut, kRemove, kIncrement (KeyOpResult as kv/key_ops.h).
  Task<absl::StatusOr<KeyOpResult>> Update(OpKind kind, std::string key, std::string value,
                                           int64_t delta);

  const LookupStats& lookup_stats() const { return lookups_; }
  const UpdateStats& update_stats() const { return updates_; }
  void set_migration_hook(MigrationHook hook) { hook_ = std::move(hook); }
  EntryPool& pool() { return pool_; }
  Context& ctx() const { return ctx_; }
  const CuckooMap& map() const { return map_; }

 private:
  enum class Found { kEntry, kInvalid, kChanged };
  // A DTE as read: its bytes (header, key, value) and what they say.
  struct EntryRead {
    Found found = Found::kChanged;
    std::string bytes;
    uint32_t key_bytes = 0;
    uint32_t value_bytes = 0;
    absl::string_view key() const {
      return absl::string_view(bytes).substr(kEntryHeaderBytes, key_bytes);
    }
    absl::string_view value() const {
      return absl::string_view(bytes).substr(kEntryHeaderBytes + key_bytes, value_bytes);
    }
  };
  enum class Moved { kDone, kRetry, kFull };
  // Whose READs these are: a GET's (LookupStats) or an update's or MIGRATE's
  // (UpdateStats), so that lookup_stats() counts lookups only (kv/kv_client.h).
  enum class ReadFor { kLookup, kUpdate };

  Task<absl::StatusOr<uint64_t>> ReadIte(uint64_t slot, ReadFor read_for);
  Task<absl::StatusOr<EntryRead>> ReadEntry(uint64_t ite, ReadFor read_for);
  // Re-reads candidates [0, n) but `skip` in reverse order: true iff all equal `ites`.
  Task<absl::StatusOr<bool>> Unchanged(const std::array<uint64_t, kMaxWays>& slots,
                                       const std::array<uint64_t, kMaxWays>& ites, int skip,
                                       ReadFor read_for);
  void CountRead(ReadFor read_for, uint64_t bytes);
  Task<absl::StatusOr<bool>> CasIte(uint64_t slot, uint64_t expected, uint64_t desired);
  // A fresh DTE of this thread holding (key, value), written invalid.
  Task<absl::StatusOr<EntryRef>> WriteEntry(absl::string_view key, absl::string_view value);
  Task<absl::Status> Validate(const EntryRef& ref);
  Task<absl::Status> Recycle(uint64_t ite);
  // Frees slot `slot` (holding `ite`) by moving its pair, recursively.
  Task<absl::StatusOr<Moved>> FreeSlot(uint64_t slot, uint64_t ite, uint32_t depth);
  Task<void> Pause(MigrationStep step, absl::string_view key);
  Task<void> Backoff(uint32_t attempt);

  Context& ctx_;
  const CuckooMap& map_;
  EntryPool pool_;
  const CuckooLimits limits_;
  LookupStats lookups_;
  UpdateStats updates_;
  MigrationHook hook_;
  std::string scratch_;  // WriteEntry's encoding buffer (reused)
  uint64_t jitter_;      // backoff jitter (xorshift state)
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_CUCKOO_OPS_H_
