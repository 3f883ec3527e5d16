// Participant: the primary's side of FaRM's two-phase commit for the objects of one
// node (paper section 3.4), on that node's own memory.
//
//   Lock(record, mode)  LOCK: for every entry, CAS the object's version from the
//                       version the transaction read (kAnyVersion: whatever it is) to
//                       locked in `mode`, and check the object is allocated with the
//                       entry's incarnation; all or nothing — on the first object locked
//                       by another, changed since, or freed, every lock this call took is
//                       released. The record is kept until Commit or Abort.
//   Validate(reads)     VALIDATE: every object read is still at the version read and not
//                       locked by another transaction (its own locks and others' read
//                       pins are fine: a pinned object does not change while pinned).
//                       A read-only transaction's also accepts others' shared locks: a
//                       shared lock's holder has not reached its serialization point
//                       (it upgrades, or applies, after), so the reader is ordered
//                       before it. A transaction that writes must not: two such
//                       transactions, each validating the other's shared-locked write
//                       set, would both commit (write skew).
//   PinReads(id, reads) a single-machine commit's VALIDATE that also pins the objects
//                       read but not locked (kPinned), so that they stay as read until
//                       Commit or Abort; then the transaction's locks may stay shared,
//                       readable by lock-free readers, until Commit (see below).
//   Commit(id)          COMMIT: first makes every lock of `id` exclusive, then writes
//                       each object and publishes its next version (writer protocol,
//                       object_codec.h), which unlocks it. Upgrading all before writing
//                       any keeps lock-free readers from seeing one object's new bytes
//                       and then another's old ones. Releases the pins last.
//   Abort(id)           releases the locks and pins of `id`, changing nothing.
//
// Readable commits. A transaction's serialization point is normally its validation, so
// from there its writes must not be readable in their old state (locks exclusive). With
// every object it read locked or pinned by it, nothing it read can change before it
// applies, so its serialization point may be as late as Commit's upgrade of all its
// locks: until then lock-free readers may see the old values (they are ordered before
// it), and Commit upgrades every lock before it writes any object. Pins are single-
// holder: a read already pinned by another transaction is valid (the pin keeps it as
// read) but cannot be pinned, and that transaction upgrades its locks and validates
// again instead (the exclusive path) — read-read sharing never aborts anyone.
//
// Entry ops: kWrite/kAlloc write the payload (exactly the object's size);
// kWriteNewIncarnation also moves the incarnation on (readers holding the old one are
// refused); kFree publishes the next version and hands the object back for the
// allocator's free (which moves the incarnation). One-sided objects
// (farm/base/object_layout.h): kAllocRaw makes the allocated slot one (zero payload, raw
// header word); kFreeRaw locks one that rawFree marked dying (or that is lost) by
// setting kRawLocked and frees it as kFree does; every other entry naming a one-sided
// object, and a kFreeRaw naming a transactional one, is InvalidArgument — the two kinds
// never mix. Commit and Abort for unknown or
// finished transactions are NotFound and change nothing.
//
// Thread safety: one thread at a time per Participant (each worker thread has its own;
// a transaction's LOCK, COMMIT and ABORT reach the same one). Objects are shared: locks
// are CAS on the headers, so participants of different threads exclude each other, and
// lock-free readers run concurrently, kept consistent by the writer protocol.
#ifndef FARM_TX_PARTICIPANT_H_
#define FARM_TX_PARTICIPANT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/block_allocator.h"
#include "farm/base/object_codec.h"
#include "tx/log_record.h"

namespace farm::tx {

// An object read by a transaction: where, at which version.
struct ReadEntry {
  Addr address;
  uint64_t version = 0;
};

// The objects and versions a validate record names.
absl::InlinedVector<ReadEntry, 8> ReadEntriesOf(const LogRecord& reads);

class Participant {
 public:
  // `regions` finds this node's regions; it must outlive the participant.
  explicit Participant(const alloc::BlockAllocator* regions) : regions_(regions) {}

  // Aborted (naming the object and why) when an object is locked or its version moved,
  // or its region is frozen for re-replication (alloc::LocalRegion::frozen);
  // FailedPrecondition when it was freed or reallocated (another incarnation);
  // InvalidArgument for a record that is not a lock record or names no object here;
  // AlreadyExists for a transaction locked already.
  absl::Status Lock(const LogRecord& record, uint64_t mode = kWriteLock);
  // Aborted when an object moved or another transaction holds it; InvalidArgument for
  // an address with no object here.
  absl::Status Validate(uint64_t transaction, std::span<const ReadEntry> reads, bool read_only = false) const;
  // Appends the objects the commit freed to `freed` (for the allocator). NotFound for a
  // transaction with no locks here.
  absl::Status Commit(uint64_t transaction, std::vector<FatPtr>* freed);
  // After Lock(record of `transaction`, kSharedLock): validates `reads` as Validate does
  // and pins each object read that `transaction` has not locked. True when all are now
  // pinned by `transaction` (its locks may stay shared until Commit); false when one is
  // valid but could not be pinned (pinned by another transaction, or in a frozen
  // region): then no pin of this call is kept and the caller must Upgrade and Validate.
  // Aborted, nothing pinned, as Validate. NotFound for a transaction with no locks here.
  absl::StatusOr<bool> PinReads(uint64_t transaction, std::span<const ReadEntry> reads);
  // Makes every lock of `transaction` exclusive (lock-free readers now retry). NotFound
  // for a transaction with no locks here.
  absl::Status Upgrade(uint64_t transaction);
  absl::Status Abort(uint64_t transaction);

  // Recovery: takes over the locks of a transaction left in doubt by a crash, which
  // replay has set on the objects already (exclusive), each entry's version the one
  // locked from. AlreadyExists as Lock; InvalidArgument for an object not here.
  absl::Status Restore(LogRecord held);
  bool Holds(uint64_t transaction) const { return locked_.contains(transaction); }
  // The lock record `transaction` holds here, or null.
  const LogRecord* Find(uint64_t transaction) const {
    auto it = locked_.find(transaction);
    return it == locked_.end() ? nullptr : &it->second;
  }
  // The transactions holding locks here.
  std::vector<uint64_t> LockedTransactions() const;
  // Locks and pins held on objects of `region` (re-replication waits for none).
  size_t LocksIn(RegionId region) const;

  size_t locked_transactions() const { return locked_.size(); }

 private:
  char* ObjectAt(Addr address, uint64_t payload) const;
  // The object at `address` in `r`, or null when it does not fit there.
  static char* ObjectIn(const alloc::LocalRegion& r, Addr address, uint64_t payload);
  // Locks one entry; on success sets its version to the one locked from.
  absl::Status LockEntry(LogEntry& e, uint64_t mode);
  // An entry naming a one-sided object (or a kFreeRaw): only a kFreeRaw of a dying or
  // lost one locks (| kRawLocked); anything else is refused (InvalidArgument).
  absl::Status LockRawEntry(LogEntry& e, char* object, uint64_t current);
  // Aborted, naming why, for a read that is no longer valid (`now` is its version word).
  static absl::Status InvalidRead(const ReadEntry& r, uint64_t now, bool ours);
  // Releases the pins of `transaction`, if any.
  void Unpin(uint64_t transaction);
  // FailedPrecondition unless the object is allocated with the entry's incarnation.
  static absl::Status CheckIncarnation(const LogEntry& e, const char* object);

  const alloc::BlockAllocator* const regions_;
  // Lock records of transactions between Lock and Commit/Abort, with the versions
  // actually locked from.
  absl::flat_hash_map<uint64_t, LogRecord> locked_;
  // Objects locked here, by address: the transaction that holds each.
  absl::flat_hash_map<uint64_t, uint64_t> holders_;
  // Objects pinned here (PinReads), per transaction, with the versions pinned at.
  absl::flat_hash_map<uint64_t, absl::InlinedVector<ReadEntry, 4>> pinned_;
};

}  // namespace farm::tx

#endif  // FARM_TX_PARTICIPANT_H_
