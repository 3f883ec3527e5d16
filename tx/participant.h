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
//                       locked by another transaction (its own locks are fine).
//   Commit(id)          COMMIT: first makes every lock of `id` exclusive, then writes
//                       each object and publishes its next version (writer protocol,
//                       object_codec.h), which unlocks it. Upgrading all before writing
//                       any keeps lock-free readers from seeing one object's new bytes
//                       and then another's old ones.
//   Abort(id)           releases the locks of `id`, changing nothing.
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
#include "absl/status/status.h"
#include "alloc/block_allocator.h"
#include "farm/base/object_codec.h"
#include "tx/log_record.h"

namespace farm::tx {

// An object read by a transaction: where, at which version.
struct ReadEntry {
  Addr address;
  uint64_t version = 0;
};

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
  absl::Status Validate(uint64_t transaction, std::span<const ReadEntry> reads) const;
  // Appends the objects the commit freed to `freed` (for the allocator). NotFound for a
  // transaction with no locks here.
  absl::Status Commit(uint64_t transaction, std::vector<FatPtr>* freed);
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
  // Locks held on objects of `region` (re-replication waits for none).
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
  // FailedPrecondition unless the object is allocated with the entry's incarnation.
  static absl::Status CheckIncarnation(const LogEntry& e, const char* object);

  const alloc::BlockAllocator* const regions_;
  // Lock records of transactions between Lock and Commit/Abort, with the versions
  // actually locked from.
  absl::flat_hash_map<uint64_t, LogRecord> locked_;
  // Objects locked here, by address: the transaction that holds each.
  absl::flat_hash_map<uint64_t, uint64_t> holders_;
};

}  // namespace farm::tx

#endif  // FARM_TX_PARTICIPANT_H_
