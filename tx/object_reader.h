// ObjectReader: one thread's lock-free reads of objects anywhere in the shared address
// space (paper sections 3.3 and 3.5; the core of lockFreeRead and of txRead).
//
// A read of FatPtr p:
//   - on this node's own regions: a torn-checked copy of the object from local memory;
//   - elsewhere: the region's primary (placement) is asked once for the region's
//     capability (cached per reader; reads arriving while it is fetched wait for that
//     one fetch), then one fabric READ of the object's stored bytes
//     into one of the reader's registered slots.
// The copy is accepted only by the read rule (CheckCopy: unlocked, line versions equal
// the header's, allocated, p's incarnation, not torn) and only if the READ took less
// than read_bound (16-bit line versions repeat after 2^14 writes). A locked or
// inconsistent copy is retried after a randomized, growing backoff until give_up_after.
//
// Errors: InvalidArgument (null pointer; a one-sided object, object_layout.h), OutOfRange (a size no object can have),
// FailedPrecondition (the object was freed, or reallocated: another incarnation; or its
// region has this node as primary but is not held here),
// NotFound (no node holds the region), DeadlineExceeded (still locked or inconsistent
// after give_up_after), Unavailable (the primary cannot be reached).
//
// ReadMany reads up to kMaxObjectsPerRead objects of one region that lie close together
// (ascending, not overlapping, all within kMaxReadSpanBytes) with one READ of the span
// they cover, and checks each copy by the read rule; one locked or inconsistent copy
// retries them all. The paper's hashtable reads a bucket and the next this way.
// Each copy is consistent on its own: objects written together by one transaction may be
// seen one before and one after it (applications that need more compare versions kept
// in the objects, as the hashtable's joint versions do).
//
// Threads: one thread (the MsgThread's loop); `done` runs there, never inline from Read.
// The payload spans it gets are valid only during the call.
#ifndef FARM_TX_OBJECT_READER_H_
#define FARM_TX_OBJECT_READER_H_

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "alloc/allocator.h"
#include "farm/base/object_copy.h"
#include "farm/base/region.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/msg_thread.h"
#include "membership/membership.h"

namespace farm::tx {

struct ObjectReaderOptions {
  uint32_t slots = 16;  // READs in flight; each slot holds the largest object
  absl::Duration read_bound = absl::Milliseconds(5);
  absl::Duration give_up_after = absl::Seconds(1);
  absl::Duration backoff_min = absl::Microseconds(2);
  absl::Duration backoff_max = absl::Microseconds(500);
  RegionId slot_region = kFirstPrivateRegion + 0x100;  // private id for the slots
};

// What a read delivers: ObjectRead (farm/base/object_copy.h), the public API's
// LockFreeObject, so continuations pass through without a wrapper.

struct ObjectReaderStats {
  uint64_t reads = 0;
  uint64_t local = 0;
  uint64_t retries_locked = 0;
  uint64_t retries_inconsistent = 0;
  uint64_t retries_slow = 0;
  uint64_t capability_fetches = 0;
};

inline constexpr uint32_t kMaxObjectsPerRead = 8;
inline constexpr uint64_t kMaxReadSpanBytes = uint64_t{1} << 20;

class ObjectReader {
 public:
  using ReadDone = absl::AnyInvocable<void(absl::StatusOr<ObjectRead>)>;
  // One ObjectRead per object, in the order given.
  using ReadManyDone = absl::AnyInvocable<void(absl::StatusOr<std::span<const ObjectRead>>)>;

  // `thread` (its loop is where everything runs), `fabric` (the slots are registered
  // with it) and `allocator` (this node's regions and the placement) must outlive it.
  static absl::StatusOr<std::unique_ptr<ObjectReader>> Create(MsgThread* thread, Fabric* fabric,
                                                              alloc::Allocator* allocator,
                                                              const ObjectReaderOptions& options = {});
  ~ObjectReader();

  void Read(FatPtr object, ReadDone done);
  // InvalidArgument when the objects are not as described above; other errors as Read's.
  void ReadMany(std::span<const FatPtr> objects, ReadManyDone done);

  const ObjectReaderStats& stats() const { return stats_; }
  // The node's serving gate (membership.h): an accepted copy is returned only while the
  // node serves — a node cut off from the cluster, whose regions may have a new primary
  // elsewhere, answers Unavailable instead of what may be stale. Null: always serve
  // (tests without membership). Before the first read.
  void set_gate(const membership::ServingGate* gate) { gate_ = gate; }

 private:
  struct Attempt {
    std::array<FatPtr, kMaxObjectsPerRead> objects;
    uint32_t count = 0;
    ReadDone done;            // exactly one of done, done_many is set
    ReadManyDone done_many;
    EventLoop::Clock::time_point give_up;
    absl::Duration backoff;
    int capability_refreshes = 0;
  };

  ObjectReader(MsgThread* thread, Fabric* fabric, alloc::Allocator* allocator,
               const ObjectReaderOptions& options, std::unique_ptr<Region> slots, LocalRegion local);

  Attempt* Begin();
  void Start(Attempt* a);
  // Offset of the first object and bytes of the span all of a's objects cover.
  static uint64_t SpanBytes(const Attempt& a);
  void ReadLocal(Attempt* a, const alloc::LocalRegion& region);
  void ReadRemote(Attempt* a);
  void PostRead(Attempt* a, NodeId primary);
  void OnReadDone(Attempt* a, uint32_t slot, EventLoop::Clock::time_point posted, const Completion& c);
  void OnCopy(Attempt* a, const char* image, bool torn, bool too_slow);
  void Retry(Attempt* a);
  // Hands the result to the read's continuation; the Attempt is reused afterwards.
  void Finish(Attempt* a, absl::Status error);
  void FinishAccepted(Attempt* a);
  Attempt* TakeAttempt();
  void ReleaseSlot(uint32_t slot);

  MsgThread* const thread_;
  Fabric* const fabric_;
  alloc::Allocator* const allocator_;
  const ObjectReaderOptions options_;
  std::unique_ptr<Region> slots_region_;
  const LocalRegion slots_;
  std::vector<uint32_t> free_slots_;
  // Attempts are owned here and reused (no allocation per read once warm); callbacks
  // hold plain pointers and check `alive_` first.
  std::vector<std::unique_ptr<Attempt>> attempts_;
  std::vector<Attempt*> free_attempts_;
  std::deque<Attempt*> waiting_for_slot_;
  absl::flat_hash_map<RegionId, RegionCapability> capabilities_;
  // Reads waiting for the capability of a region whose fetch is in flight.
  absl::flat_hash_map<RegionId, std::vector<Attempt*>> capability_waiters_;
  alloc::PlacementCache placement_;  // the primaries of remote regions, this thread's copy
  std::vector<char> scratch_;  // [0, 1 MiB): local copies; [1 MiB, 2 MiB): decoded payloads
  std::array<ObjectRead, kMaxObjectsPerRead> results_;
  absl::BitGen rng_;
  std::shared_ptr<ObjectReader*> alive_;
  ObjectReaderStats stats_;
  const membership::ServingGate* gate_ = nullptr;
};

}  // namespace farm::tx

#endif  // FARM_TX_OBJECT_READER_H_
