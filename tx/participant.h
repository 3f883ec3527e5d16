// Participant: the primary's side of FaRM's two-phase commit for the objects of one
// node (paper section 3.4), on that node's own memory.
//
//   Lock(record)      LOCK: for every entry, CAS the object's version from the version
//                     the transaction read to locked; all or nothing — on the first
//                     object locked by another or changed since, every lock this call
//                     took is released and the transaction must abort. The record is
//                     kept until Commit or Abort.
//   Validate(reads)   VALIDATE: every object read is still at the version read and not
//                     locked by another transaction (its own locks are fine).
//   Commit(id)        COMMIT: writes each locked object's new payload and publishes its
//                     next version (writer protocol, object_codec.h), which unlocks it.
//   Abort(id)         releases the locks of `id`, changing nothing.
// A write entry carries the object's whole payload (its size is the object's: line
// versions are published for exactly those bytes); a free entry carries none and only
// unlocks (the allocator's free then moves the incarnation). Commit and Abort for
// unknown or finished transactions are errors and change nothing. Thread safety: one thread at a time (the node's commit path); the objects
// themselves are read concurrently by lock-free readers, which the writer protocol
// keeps consistent.
#ifndef FARM_TX_PARTICIPANT_H_
#define FARM_TX_PARTICIPANT_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "alloc/block_allocator.h"
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

  // Aborted (with the object and why) when an object is locked or its version moved;
  // InvalidArgument for a record that is not a lock record or names no object here;
  // AlreadyExists for a transaction locked already.
  absl::Status Lock(const LogRecord& record);
  // Aborted when an object moved or another transaction holds it.
  absl::Status Validate(uint64_t transaction, const std::vector<ReadEntry>& reads) const;
  // NotFound for a transaction with no locks here.
  absl::Status Commit(uint64_t transaction);
  absl::Status Abort(uint64_t transaction);

  size_t locked_transactions() const { return locked_.size(); }

 private:
  char* ObjectAt(Addr address, uint64_t payload) const;

  const alloc::BlockAllocator* const regions_;
  // Lock records of transactions between Lock and Commit/Abort.
  absl::flat_hash_map<uint64_t, LogRecord> locked_;
  // Objects locked here, by address: the transaction that holds each.
  absl::flat_hash_map<uint64_t, uint64_t> holders_;
};

}  // namespace farm::tx

#endif  // FARM_TX_PARTICIPANT_H_
