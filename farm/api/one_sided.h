// One-sided objects: the raw facet of the public API, for data structures that keep
// their own consistency (Nessie's cuckoo table, lock-free rings, counters).
//
//   rawAlloc, rawFree                          a region of raw memory of N bytes, and back
//   rawRead, rawWrite                          one-sided READ / WRITE of a byte range
//   rawCas64, rawFetchAdd64                    8-byte one-sided atomics; the old value
//   rawStats                                   this thread's counts of them
//
// A one-sided object is named by a RawPtr (farm/base/address.h: address, size,
// incarnation), a type of its own: it converts neither to nor from FatPtr. Its bytes are
// plain memory — no versions, no line versions, no locks — reached with the fabric's
// one-sided operations, so on the shm and verbs fabrics no CPU of the machine that holds
// it runs anything for an op (on tcp its responder thread does, the software NIC; never
// a worker thread).
//
// The contract:
//   - Threads: every call takes the calling worker thread's Context (as farm.h's calls
//     do); continuations run later on that thread, never inside the call.
//   - Arguments: `offset` and `length` are payload offsets, checked against the
//     pointer's size (a range outside it, or of 0 bytes, is InvalidArgument naming
//     both); the atomics need an 8-byte-aligned `offset` with 8 bytes inside the object
//     (else InvalidArgument). The size a pointer carries is checked against the object's
//     header, so bounds are the object's own.
//   - Atomicity: rawCas64 and rawFetchAdd64 are atomic with each other, from any
//     machines and threads (on verbs, a CPU's atomic on the holding machine and a NIC's
//     from a peer are atomic with each other only where the device reports
//     IBV_ATOMIC_GLOB: see tx/one_sided.h). A rawRead of one 8-byte-aligned word is
//     atomic. Longer reads are not: a rawRead concurrent with rawWrites (or atomics) of
//     the same range may return a mix of old and new bytes — torn. The CPU-executed
//     fabrics (shm, tcp) and local reads report a change of any 8-byte word of the range
//     during the copy as RawBytes::torn; verbs reports nothing (a NIC reads each cache
//     line atomically, and bytes of different lines may still come from different
//     writes). So an application checks what it reads — a checksum, or a version or
//     key kept with the data, as Nessie does — and treats `torn` as a hint, never as
//     proof of consistency.
//   - Order: a rawWrite lands in increasing address order. An op started after another
//     op's continuation ran sees that op's effect; ops in flight together are unordered.
//   - No mixing: a transaction (txRead, txFree, ...) or a lock-free read of a one-sided
//     object is InvalidArgument, and a one-sided op (or rawFree) on a transactional
//     object is InvalidArgument. The kind is in the object's header
//     (farm/base/object_layout.h, "One-sided objects") and checked on every path, so a
//     pointer made from a FatPtr's fields, or decoded from bytes, fails cleanly instead
//     of corrupting anything — short of pointing at bytes crafted to imitate both
//     header words of a live one-sided object of that size and incarnation.
//   - Freed objects: an op through a pointer to an object that rawFree freed (or whose
//     slot now holds another object) is FailedPrecondition, and never touches the
//     slot's new occupant: rawFree waits for every op that may still use the object to
//     end before the memory is reused (an end-of-epoch round over the cluster).
//   - Failures: one-sided writes reach only the object's primary; they are neither
//     replicated nor logged. A one-sided object's allocation is (like a transaction's:
//     its header and zero bytes reach the backups and the log), so the object survives
//     a crash as an object — but not its bytes. When its region's primary changes (the
//     primary failed and a backup was promoted, the node restarted on its data, or the
//     region was handed over to a joining node), every one-sided object of the region
//     is marked lost, and every later op on it is DataLoss until it is freed with
//     rawFree (which works on a lost object). Writes acknowledged around the change may
//     be lost, but only in objects that then report DataLoss; no op returns the old
//     bytes as if nothing happened once the caller's node knows the new configuration.
//     An op in flight when its target's machine fails is Unavailable; for rawWrite,
//     rawCas64 and rawFetchAdd64 the message says it may or may not have executed.
//     A node that does not serve (lease lost) answers Unavailable.
//
// Errors (absl::Status): InvalidArgument — a bad range or alignment, a null or malformed
// pointer, or the other kind of object; FailedPrecondition — freed, reallocated, or being
// freed; DataLoss — lost with its primary (above); OutOfRange — rawAlloc of more than
// the largest object (alloc/size_classes.h); NotFound — no machine holds the address's
// region; Unavailable / DeadlineExceeded — a machine did not answer; Aborted — rawAlloc's
// or rawFree's own transaction kept conflicting (e.g. its region is being re-replicated
// after a configuration change): call it again.
//
// Costs (remote objects): one fabric op per call, plus, the first time a thread uses an
// object after an end-of-epoch round or a configuration change, one 16-byte READ of its
// header, and the first time it uses a region, one message for its capability.
//
// Sealed: like farm.h, this header names nothing of tx/, alloc/, membership/ or node/.
#ifndef FARM_API_ONE_SIDED_H_
#define FARM_API_ONE_SIDED_H_

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/base/address.h"

namespace farm {

// What rawRead delivers: the bytes, valid during the continuation only, and whether a
// CPU-executed copy saw them change while it copied (see "Atomicity" above).
struct RawBytes {
  std::span<const char> data;
  bool torn = false;
};

// A new one-sided object of `size` zero bytes (1 .. the largest object) near `hint`
// (Addr(): on this machine; an address: in its block or region, or near it, as txAlloc
// places objects). Allocated by a transaction of its own: the object exists on its
// primary and its backups once the continuation runs. InvalidArgument for 0 bytes.
void rawAlloc(Context& ctx, uint32_t size, Addr hint, Cont<absl::StatusOr<RawPtr>> cont);

// Frees the object: marks it dying (ops on it fail from now on), waits until no op that
// may have seen it alive is still running anywhere (an end-of-epoch round over every
// member), then frees its slot in a transaction. Works on a lost object. The round
// starts once no transaction, LockFreeOp or one-sided op is open on this thread (other
// work of the thread ends on its own); a caller that keeps its own open across rawFree
// gets FailedPrecondition after a second, the object untouched. A round that fails (a
// member did not answer) is Unavailable
// and leaves the object dying: call rawFree again. A second rawFree of the same object
// is FailedPrecondition.
void rawFree(Context& ctx, RawPtr object, Cont<absl::Status> cont);

// READ of `length` bytes at `offset`.
void rawRead(Context& ctx, RawPtr object, uint32_t offset, uint32_t length, Cont<absl::StatusOr<RawBytes>> cont);
// WRITE of `bytes` (copied during the call) at `offset`.
void rawWrite(Context& ctx, RawPtr object, uint32_t offset, std::span<const char> bytes, Cont<absl::Status> cont);
// CAS of the 8-byte word at `offset` (8-aligned): the word's value before the op; it was
// replaced by `desired` iff that value equals `expected`.
void rawCas64(Context& ctx, RawPtr object, uint32_t offset, uint64_t expected, uint64_t desired,
              Cont<absl::StatusOr<uint64_t>> cont);
// FETCH_ADD of `delta` (wrapping) to the 8-byte word at `offset` (8-aligned): its value
// before the op.
void rawFetchAdd64(Context& ctx, RawPtr object, uint32_t offset, uint64_t delta, Cont<absl::StatusOr<uint64_t>> cont);

// This thread's one-sided ops, counted by the initiator when they complete (the holder
// of an object counts nothing: it runs nothing for them).
struct RawStats {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t compare_swaps = 0;
  uint64_t fetch_adds = 0;
  uint64_t local = 0;        // on objects this machine holds: executed by this thread
  uint64_t remote = 0;       // one fabric op each
  uint64_t validations = 0;  // 16-byte header READs (see "Costs")
  uint64_t capability_fetches = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t failed = 0;       // ops that ended in an error
};
RawStats rawStats(Context& ctx);

}  // namespace farm

#endif  // FARM_API_ONE_SIDED_H_
