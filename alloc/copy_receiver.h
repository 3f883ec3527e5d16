// RegionCopyReceiver: the receiving side of the region copy protocol (region_copy.h) —
// which copies are being received, from whom, and what arrived — over BackupRegions.
// AllocService decodes the requests, calls these, and logs what they changed.
//
//   Begin  resets the copy (BackupRegions::Reset: created, or zeroed, with the sender
//          as its primary) and starts a copy from the sender; a later Begin for the
//          region replaces the one in progress, whoever sent it
//   Data   writes one chunk; only from the sender of the copy in progress, at an offset
//          at or after the end of its previous chunk (chunks come in offset order on
//          one ring), inside the copy
//   End    compares the bytes and their CRC-32C (in offset order) with what arrived,
//          and ends the copy either way
// A request refused as out of place (FailedPrecondition) or wrong (InvalidArgument)
// changes nothing: the copy's bytes and the copy in progress stay as they were. An End
// that finds a mismatch (DataLoss) ends the copy all the same: the sender begins again.
//
// Thread safety: any thread.
#ifndef FARM_ALLOC_COPY_RECEIVER_H_
#define FARM_ALLOC_COPY_RECEIVER_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "alloc/backup_regions.h"
#include "alloc/copy_messages.h"
#include "alloc/durable_records.h"
#include "farm/base/mutex.h"

namespace farm::alloc {

class RegionCopyReceiver {
 public:
  // `copies` must outlive the receiver.
  explicit RegionCopyReceiver(BackupRegions* copies) : copies_(copies) {}

  // BackupRegions::Reset's errors (the copy in progress, if any, is kept then).
  absl::Status Begin(NodeId from, const CopyBegin& begin);
  // FailedPrecondition when no copy of the region from `from` is in progress;
  // InvalidArgument for a chunk that is empty, runs past the copy, or starts before the
  // end of the previous one.
  absl::Status Data(NodeId from, const RegionImage& chunk);
  // FailedPrecondition as Data's; DataLoss naming the mismatch when the bytes or the
  // CRC differ from what arrived.
  absl::Status End(NodeId from, const CopyEnd& end);
  // Forgets the copy of `region` in progress from `from` (its BEGIN was not made
  // durable): its DATA are refused from now on.
  void Abandon(NodeId from, RegionId region);

  // Copies in progress (tests, statistics).
  size_t in_progress() const;
  // False from a Begin of `region` until an End that matched: a copy begun and not
  // received whole (its sender failed, or the bytes did not match) must never serve as
  // the region (failover promotes only complete copies).
  bool Complete(RegionId region) const;

 private:
  struct InProgress {
    NodeId from = kInvalidNode;
    uint64_t next_offset = 0;  // the end of the last chunk written
    uint64_t bytes = 0;
    uint64_t chunks = 0;
    uint32_t crc = 0;
  };

  BackupRegions* const copies_;
  mutable Mutex mu_;
  absl::flat_hash_map<RegionId, InProgress> in_progress_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<RegionId> incomplete_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_COPY_RECEIVER_H_
