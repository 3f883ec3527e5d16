// RegionCopyReceiver: the receiving side of the region copy protocol (region_copy.h) —
// which copies are being received, from whom, and what arrived — over BackupRegions.
// AllocService decodes the requests, calls these, and logs what they changed.
//
//   Begin  resets the copy (BackupRegions::Reset: created, or zeroed, with the sender
//          as its primary) and starts a copy from the sender; a later Begin for the
//          region replaces the one in progress, whoever sent it
//   Data   writes one chunk; only from the sender of the copy in progress, at an offset
//          at or after the end of its previous chunk (chunks come in offset order on
//          one ring), inside the copy. Its log record is then queued; Logged reports it
//          durable (or failed)
//   End    compares the bytes and their CRC-32C (in offset order) with what arrived,
//          and ends the copy either way; a copy that matched is complete once every
//          chunk's record is durable, and End's `done` waits for that
// A request refused as out of place (FailedPrecondition) or wrong (InvalidArgument)
// changes nothing: the copy's bytes and the copy in progress stay as they were. An End
// that finds a mismatch (DataLoss) ends the copy all the same: the sender begins again.
//
// Durability: a chunk is answered once written here, before its record is durable —
// what makes a copy safe is that End answers only once every record is — except that
// at most `max_unlogged_bytes` of a copy's chunks may wait for the log: a chunk past
// that is answered once its own record is durable (Data says which), so the log's
// queue stays bounded and the sender's window paces the copy by the disk. A copy's
// speed is then the fabric's or the disk's, not one sync per window of chunks.
//
// Thread safety: any thread.
#ifndef FARM_ALLOC_COPY_RECEIVER_H_
#define FARM_ALLOC_COPY_RECEIVER_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/backup_regions.h"
#include "alloc/copy_messages.h"
#include "alloc/durable_records.h"
#include "farm/base/mutex.h"

namespace farm::alloc {

// Identifies a chunk's log record to Logged: the copy it belongs to (copies of one
// region begun one after another differ) and its bytes.
struct CopyChunkTicket {
  RegionId region = 0;
  uint64_t copy = 0;
  uint64_t bytes = 0;
};

struct CopyChunkAccepted {
  CopyChunkTicket ticket;
  // Answer the chunk once its record is durable (the copy's unlogged bytes are over the
  // bound), not at once.
  bool answer_when_logged = false;
};

class RegionCopyReceiver {
 public:
  static constexpr uint64_t kDefaultMaxUnloggedBytes = 4 << 20;

  // `copies` must outlive the receiver.
  explicit RegionCopyReceiver(BackupRegions* copies, uint64_t max_unlogged_bytes = kDefaultMaxUnloggedBytes)
      : copies_(copies), max_unlogged_bytes_(max_unlogged_bytes) {}

  // Returns the copy's number: never 0, and distinct from every other copy this receiver
  // began (its kRegionReset and kRegionCopied records carry it). BackupRegions::Reset's
  // errors (the copy in progress, if any, is kept then). A copy in progress whose End
  // waits for its records is answered Aborted.
  absl::StatusOr<uint64_t> Begin(NodeId from, const CopyBegin& begin);
  // FailedPrecondition when no copy of the region from `from` is in progress (or its End
  // came); InvalidArgument for a chunk that is empty, runs past the copy, or starts
  // before the end of the previous one; the first log error of the copy, once one came.
  // On success the chunk's record must be appended and reported to Logged.
  absl::StatusOr<CopyChunkAccepted> Data(NodeId from, const RegionImage& chunk);
  // The chunk's record is durable, or failed with `status` (the copy then fails: its
  // End answers with the error). May run End's `done`, on this thread.
  void Logged(const CopyChunkTicket& chunk, const absl::Status& status);
  // Ends the copy in progress from `from`; `done` runs once, here or inside the Logged
  // that makes the last of its chunks durable: OK once the copy matched and every record
  // is durable (the copy is complete from then on); FailedPrecondition as Data's;
  // DataLoss naming the mismatch when the bytes or the CRC differ from what arrived;
  // the first log error; Aborted when a new Begin or Abandon replaced the copy first.
  // `copy` is the number Begin gave the copy ended (0 when none was in progress).
  using EndDone = absl::AnyInvocable<void(absl::Status status, uint64_t copy)>;
  void End(NodeId from, const CopyEnd& end, EndDone done);
  // Forgets the copy of `region` in progress from `from` (its BEGIN was not made
  // durable): its DATA are refused from now on.
  void Abandon(NodeId from, RegionId region);

  // Copies in progress (tests, statistics).
  size_t in_progress() const;
  // The sender of the copy of `region` in progress; kInvalidNode when none is.
  NodeId Receiving(RegionId region) const;
  // False from a Begin of `region` (or a MarkPartial) until an End that matched, with
  // every record durable: a copy begun and not received whole (its sender failed, the
  // bytes did not match, or this node stopped while it arrived) must never serve as the
  // region (failover promotes only complete copies).
  bool Complete(RegionId region) const;
  // A copy held that the node's log left partial (tx::ReplayResult::partial_copies): not
  // Complete until a copy of the region succeeds.
  void MarkPartial(RegionId region);

 private:
  struct InProgress {
    NodeId from = kInvalidNode;
    uint64_t copy = 0;         // which Begin started it
    uint64_t next_offset = 0;  // the end of the last chunk written
    uint64_t bytes = 0;
    uint64_t chunks = 0;
    uint32_t crc = 0;
    uint64_t unlogged_bytes = 0;  // of chunks whose records are not reported durable yet
    absl::Status log_error;       // the first
    // Set once End matched: runs when unlogged_bytes reaches zero.
    absl::AnyInvocable<void(absl::Status)> ended;
  };
  using Done = absl::AnyInvocable<void(absl::Status)>;

  // Forgets the copy of `region` in progress (it exists), marking the region complete or
  // not, and returns what its End waits with (to run once mu_ is released), if anything.
  Done FinishLocked(RegionId region, bool complete) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  BackupRegions* const copies_;
  const uint64_t max_unlogged_bytes_;
  mutable Mutex mu_;
  uint64_t next_copy_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<RegionId, InProgress> in_progress_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<RegionId> incomplete_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_COPY_RECEIVER_H_
