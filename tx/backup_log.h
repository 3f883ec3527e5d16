// BackupLog: a backup's side of a transaction (paper section 3.4: "both primaries and
// replicas log the message"): it keeps the lock records of prepared transactions for
// the regions it holds backup copies of, and applies a transaction's writes, frees and
// allocations to those copies when the commit arrives, so that a copy is the primary's
// committed state (recovery promotes it later).
//
// Records are kept in memory until the transaction's outcome arrives, then dropped
// (applied or aborted); making them durable is the recovery issue's. Applying an entry
// writes the object exactly as the primary does: kWrite/kAlloc the payload at the next
// version (kAnyVersion: the copy's own version moved on, which equals the primary's
// because every committed change reaches every backup), kWriteNewIncarnation also the
// next incarnation, kFree the next version and a freed incarnation word. Allocated bits
// reach backups this way, at commit.
//
// Thread safety: one thread at a time per BackupLog; copies are shared by the node's
// threads but a transaction's objects are locked at their primary, so two threads never
// apply the same object at once.
#ifndef FARM_TX_BACKUP_LOG_H_
#define FARM_TX_BACKUP_LOG_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/backup_regions.h"
#include "alloc/block_allocator.h"
#include "tx/log_record.h"

namespace farm::tx {

struct BackupLogStats {
  uint64_t prepared = 0;
  uint64_t committed = 0;
  uint64_t aborted = 0;
  uint64_t entries_applied = 0;
  uint64_t entries_skipped = 0;  // Apply: the copy had them already (a record sent again)
};

class BackupLog {
 public:
  // `promoted` (may be null): the node's own regions, where a kept record's entries are
  // found once their copy was promoted to primary by failover (the record is then
  // settled by recovery, and applied to the promoted region).
  explicit BackupLog(const alloc::BackupRegions* copies, const alloc::BlockAllocator* promoted = nullptr)
      : copies_(copies), promoted_(promoted) {}

  // Keeps `record` (a lock record whose entries are all in copies held here).
  // InvalidArgument for an entry outside every copy; AlreadyExists for a second record
  // of one transaction.
  absl::Status Prepare(LogRecord record);
  // Applies the kept record of `transaction` and drops it. NotFound when none is kept.
  absl::Status Commit(uint64_t transaction);
  // Applies `record` (a single-machine commit's record, which has no prepare phase) to
  // the backup copies held here: it carries every entry of the transaction, and those of
  // regions with no copy here are passed over (backed elsewhere, or a copy still to
  // come: it will be sent whole, the commit in it), as are entries the copy has already
  // (the object moved past the version its primary locked it from: a record sent
  // again). The number of entries applied; InvalidArgument, with nothing applied, for an
  // entry that does not fit the copy of its region.
  absl::StatusOr<size_t> Apply(const LogRecordView& record);
  // What Apply would apply, without applying it (the same errors).
  absl::StatusOr<size_t> Missing(const LogRecordView& record) const;
  // Failover (retained_commits.h): applies the entries of `record` in `regions` (backup
  // copies held here) that the copy lacks. The number of entries applied.
  size_t ApplyMissing(const LogRecord& record, const absl::flat_hash_set<RegionId>& regions);
  // Drops the kept record of `transaction`. NotFound when none is kept.
  absl::Status Abort(uint64_t transaction);

  size_t pending() const { return pending_.size(); }
  // The kept record of `transaction`, or null.
  const LogRecord* Find(uint64_t transaction) const {
    auto it = pending_.find(transaction);
    return it == pending_.end() ? nullptr : &it->second;
  }
  // The transactions with a kept record.
  std::vector<uint64_t> PendingTransactions() const;
  const BackupLogStats& stats() const { return stats_; }

 private:
  char* ObjectAt(const LogEntryView& e) const;
  // The object of `e` in a backup copy held here (never a promoted region); null when
  // no copy holds its region, or it does not fit.
  char* CopyObjectAt(const LogEntryView& e) const;
  absl::Status CheckEntries(const LogRecord& record) const;
  void ApplyEntries(const LogRecord& record);
  void ApplyEntry(const LogEntryView& e, char* object);

  const alloc::BackupRegions* const copies_;
  const alloc::BlockAllocator* const promoted_;
  absl::flat_hash_map<uint64_t, LogRecord> pending_;
  BackupLogStats stats_;
};

}  // namespace farm::tx

#endif  // FARM_TX_BACKUP_LOG_H_
