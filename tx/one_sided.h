// OneSidedAccess: one worker thread's one-sided ops on one-sided objects — the engine of
// the public API's raw facet (farm/api/one_sided.h; the object layout and its header
// word are in farm/base/object_layout.h, "One-sided objects").
//
// An op on RawPtr p (Read, Write, CompareSwap, FetchAdd on a payload range; MarkDying on
// the header word, for rawFree):
//   1. its arguments are checked against p (bounds, 8-byte alignment of atomics);
//   2. it enters the thread's epoch (alloc/epoch.h) and leaves it when it completes;
//   3. on a region this node holds (it is the primary): the header is checked in place
//      and the op executed by this thread with the CPU's atomics and ordered copies
//      (farm/base/cpu_copy.h), as the shm and tcp fabrics execute peers' ops;
//   4. elsewhere: the region's primary (placement) and its capability (fetched once per
//      region and primary, by message); then, unless this thread validated p under the
//      current configuration in an epoch bracket of the epoch its bracket has now, one
//      16-byte READ of p's header (validation); then the op as one fabric work request.
//      The owner's CPU runs nothing for it on shm (the initiator copies) and verbs (the
//      NIC); on tcp the owner's responder thread executes it (a software NIC), never a
//      worker thread.
//
// Invariants:
//   1. A validation (the header READ, or the in-place check) accepts only: allocated at
//      p's incarnation, a raw header word (object_layout.h) of p's size and incarnation,
//      no flag (MarkDying also accepts kRawDying and kRawLost). The cache keeps accepted
//      validations by address with the epoch of the bracket they ran in and the
//      placement generation; an op uses one only when both still hold (else validates
//      again), and the cache is emptied when the generation moves.
//   2. rawFree (farm/api/one_sided.cc) frees only after: MarkDying (CAS live -> dying,
//      comparing the whole word: size and incarnation bits too), then an end-of-epoch
//      round over every member (alloc/end_of_epoch.h), then a kFreeRaw transaction.
//   3. Hence no op touches a slot after it was freed: take op O with bracket epoch e that
//      used validation V of epoch e. If O entered before the round advanced this
//      machine's epoch, the round waited for O, so the free came after O. Otherwise O's
//      epoch e is at least the advanced one, so V's bracket (epoch e) also entered after
//      the advance, which came after MarkDying: V's READ saw the dying word and accepted
//      nothing. (epoch.h's invariant 2 is what makes "entered after the advance" and
//      "publishes an epoch past it" the same thing.) It assumes an op whose completion came
//      back is not executed later by its target. An op that fails kTransportError (the
//      connection broke) may in principle still run at a target that had read it: a
//      narrow window — the free's round and a reuse of the slot must fit inside it —
//      that this design does not close.
//   4. A change of a region's primary makes the new primary's copy answer DataLoss
//      (AdoptRegion sets kRawLost before the region serves), and the placement
//      generation moves on every node that learns the configuration, so cached
//      validations of the old primary are not used for the new one.
//
// Not atomic with each other on verbs: a local CompareSwap/FetchAdd is a CPU atomic, a
// peer's is the NIC's; NICs that do not report IBV_ATOMIC_GLOB do not make the two
// atomic with each other (shm and tcp execute every op with CPU atomics: they are).
//
// Threads: one thread (the MsgThread's loop); every `done` runs there, never inside the
// call that started the op. A Read's bytes are valid only during its `done`.
#ifndef FARM_TX_ONE_SIDED_H_
#define FARM_TX_ONE_SIDED_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "alloc/allocator.h"
#include "alloc/epoch.h"
#include "farm/base/address.h"
#include "farm/base/region.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/msg_thread.h"
#include "membership/membership.h"

namespace farm::tx {

struct OneSidedOptions {
  uint32_t small_slots = 64;                          // ops of at most kSmallSlotBytes
  uint32_t large_slots = 2;                           // larger READs and WRITEs
  RegionId slot_region = kFirstPrivateRegion + 0x300;  // private id of the staging slots
  size_t max_cached_validations = 1 << 16;            // emptied when it grows past this
};

// Per thread, ops as the initiator counts them (the owner counts nothing: it runs
// nothing for them, see above). Ops are counted when they complete successfully.
struct OneSidedStats {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t compare_swaps = 0;
  uint64_t fetch_adds = 0;
  uint64_t local = 0;        // executed here: this node is the object's primary
  uint64_t remote = 0;       // posted to the fabric (validations not included)
  uint64_t validations = 0;  // header READs
  uint64_t capability_fetches = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t failed = 0;       // ops that ended in an error
};

// What a Read delivers: the bytes (valid during the continuation only) and whether a
// CPU-executed copy saw any 8-byte word of the range change while it copied (never set
// on verbs, where the NIC reads each cache line atomically and reports nothing).
struct OneSidedRead {
  std::span<const char> data;
  bool torn = false;
};

inline constexpr uint32_t kSmallSlotBytes = 4096;

class OneSidedAccess {
 public:
  using ReadDone = absl::AnyInvocable<void(absl::StatusOr<OneSidedRead>)>;
  using WordDone = absl::AnyInvocable<void(absl::StatusOr<uint64_t>)>;
  using StatusDone = absl::AnyInvocable<void(absl::Status)>;

  // `thread`, `fabric` (the slots are registered with it), `allocator` (this node's
  // regions and the placement) and `epoch` (the thread's participant) must outlive it.
  static absl::StatusOr<std::unique_ptr<OneSidedAccess>> Create(MsgThread* thread, Fabric* fabric,
                                                                alloc::Allocator* allocator,
                                                                alloc::EpochParticipant* epoch,
                                                                const OneSidedOptions& options = {});
  // Ops in flight never complete (their continuations are destroyed unrun); their
  // epoch brackets are closed.
  ~OneSidedAccess();

  // `length` bytes from payload offset `offset`.
  void Read(RawPtr p, uint32_t offset, uint32_t length, ReadDone done);
  // `bytes` (copied during the call) at payload offset `offset`, in increasing address
  // order.
  void Write(RawPtr p, uint32_t offset, std::span<const char> bytes, StatusDone done);
  // The 8-byte word at `offset` (8-aligned): the value before; swapped iff it equalled
  // `expected`.
  void CompareSwap(RawPtr p, uint32_t offset, uint64_t expected, uint64_t desired, WordDone done);
  void FetchAdd(RawPtr p, uint32_t offset, uint64_t delta, WordDone done);
  // rawFree's first step: the header word goes from live to dying (one CAS of the whole
  // word). OK also when it was dying or lost already (the free goes on);
  // FailedPrecondition while a kFreeRaw holds it; the validation's errors otherwise.
  void MarkDying(RawPtr p, StatusDone done);

  const OneSidedStats& stats() const { return stats_; }
  // The node's serving gate (membership.h): a node that does not serve answers
  // Unavailable. Null: always serve. Before the first op.
  void set_gate(const membership::ServingGate* gate) { gate_ = gate; }

 private:
  enum class Kind : uint8_t { kRead, kWrite, kCompareSwap, kFetchAdd, kMarkDying };
  struct Op {
    Kind kind = Kind::kRead;
    RawPtr p;
    uint32_t offset = 0;
    uint32_t length = 0;
    uint64_t compare = 0;  // kCompareSwap: expected; kFetchAdd: delta
    uint64_t swap = 0;
    std::string bytes;     // kWrite
    ReadDone read_done;    // exactly one of the three is set
    WordDone word_done;
    StatusDone status_done;
    bool entered = false;  // inside the thread's epoch
    int slot = -1;         // staging slot, -1: none
    int capability_refreshes = 0;
    int torn_validations = 0;
    NodeId primary = kInvalidNode;
  };
  struct Capability {
    NodeId primary = kInvalidNode;
    RegionCapability cap;
  };
  struct Validated {
    uint32_t size = 0;
    uint32_t incarnation = 0;
    uint64_t epoch = 0;
  };

  OneSidedAccess(MsgThread* thread, Fabric* fabric, alloc::Allocator* allocator, alloc::EpochParticipant* epoch,
                 const OneSidedOptions& options, std::unique_ptr<Region> slots, LocalRegion local);

  Op* NewOp(Kind kind, RawPtr p, uint32_t offset, uint32_t length);
  // Checks the arguments, then starts the op from the loop (never inline).
  void Submit(Op* op);
  void Start(Op* op);
  void ExecuteLocal(Op* op, char* base);
  void WithCapability(Op* op);
  void OnCapability(RegionId region, NodeId primary, absl::StatusOr<RegionCapability> cap);
  bool IsValidated(const Op& op);
  void PostValidation(Op* op);
  void OnValidation(Op* op, const Completion& c);
  void PostOp(Op* op);
  void OnOpDone(Op* op, const Completion& c);
  // Posts `wr` for `op` (its slot taken); on ResourceExhausted the op waits for another
  // completion. `then` handles the completion.
  void Post(Op* op, WorkRequest wr, void (OneSidedAccess::*then)(Op*, const Completion&));
  // The payload's byte at `offset` in the object's region.
  static uint64_t PayloadOffset(const Op& op) { return op.p.addr.offset() + 16 + op.offset; }
  // Validation of a header (version word, incarnation word) for `op`.
  absl::Status CheckHeader(const Op& op, uint64_t word, uint64_t incarnation_word) const;
  // Slots: small for ops of at most kSmallSlotBytes, else large. False: none free (the
  // op waits and is started again when one is released).
  bool TakeSlot(Op* op);
  char* SlotAt(int slot) const;
  void ReleaseSlot(Op* op);
  void Finish(Op* op, absl::Status error);
  void FinishRead(Op* op, const char* data, bool torn);
  void FinishWord(Op* op, uint64_t old);
  void FinishOk(Op* op);
  void Recycle(Op* op);
  void RetryWaiting();

  MsgThread* const thread_;
  Fabric* const fabric_;
  alloc::Allocator* const allocator_;
  alloc::EpochParticipant* const epoch_;
  const OneSidedOptions options_;
  std::unique_ptr<Region> slots_region_;
  const LocalRegion slots_;
  std::vector<int> free_small_;
  std::vector<int> free_large_;
  std::deque<Op*> waiting_;  // for a slot, or for room on an endpoint
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<Op*> free_ops_;
  absl::flat_hash_map<RegionId, Capability> capabilities_;
  absl::flat_hash_map<RegionId, std::vector<Op*>> fetching_;  // ops waiting for a capability
  absl::flat_hash_map<uint64_t, Validated> validated_;         // by Addr::raw()
  uint64_t validated_generation_ = ~uint64_t{0};
  alloc::PlacementCache placement_;
  std::vector<char> scratch_;  // local reads
  size_t in_flight_ = 0;       // work requests posted and not completed
  bool retry_timer_ = false;
  std::shared_ptr<OneSidedAccess*> alive_;
  OneSidedStats stats_;
  const membership::ServingGate* gate_ = nullptr;
};

}  // namespace farm::tx

#endif  // FARM_TX_ONE_SIDED_H_
