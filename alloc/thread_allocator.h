// ThreadAllocator: one thread's slab allocators (paper section 3.3) — for each size
// class, the blocks this thread owns — plus the thread's side of location hints,
// remote allocation and epoch-based reclamation.
//
// Allocation of `payload` bytes near `hint`:
//   - no hint: the class's current block, then another owned block with free slots
//     (after collecting frees from other threads), then an adoptable block, then a new
//     block from the BlockAllocator, then a new region;
//   - a hint in a region this node holds: the hint's block when this thread owns it and
//     it is of the same class and has a free slot; else a block of this thread in the
//     hint's region; else a new block there; else a block in a local region on the
//     same ring whose position is nearest the hint's — one of this thread's with a free
//     slot (or an adoptable one) before a new one, so that a full hint region costs no
//     new block per allocation; else a new region near it;
//   - a hint in another machine's region: an RPC to that region's primary, which
//     allocates near the hint as above.
// The allocated object has its allocated bit set and keeps the incarnation its slot
// had (0 for fresh memory); the FatPtr carries its low 32 bits.
//
// Free: a CAS of the header's incarnation word from (allocated, n) to (free, n + 1), so
// a stale FatPtr or a second free is refused (FailedPrecondition) and never frees a
// reallocated object. The slot is reused at once for its class. A block left empty is
// retired (unless it is the class's current block): after an end-of-epoch round over
// all members it returns to the BlockAllocator, so another class may reuse the memory
// only when no operation that started before the retirement can still read it.
//
// Asynchrony: Allocate and Free complete through a continuation on this thread. When no
// message is needed (a slot at hand, a local free) it runs before the call returns;
// otherwise the thread's event loop must run for it to complete. Slow allocations of one
// thread are served one at a time, in order. A continuation may allocate and free again,
// but must not destroy the ThreadAllocator.
//
// Thread safety: one thread at a time (the owner); Free of another thread's object
// goes through that block's atomic bitmap.
#ifndef FARM_ALLOC_THREAD_ALLOCATOR_H_
#define FARM_ALLOC_THREAD_ALLOCATOR_H_

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "alloc/allocator.h"
#include "alloc/epoch.h"
#include "alloc/slab_block.h"
#include "alloc/thread_channel.h"

namespace farm::alloc {

struct ThreadAllocatorStats {
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t remote_allocations = 0;  // sent to another primary
  uint64_t blocks_acquired = 0;
  uint64_t blocks_adopted = 0;
  uint64_t blocks_retired = 0;
  uint64_t blocks_released = 0;  // returned to the BlockAllocator after a round
  uint64_t regions_created = 0;
  uint64_t rounds = 0;
  uint64_t rounds_failed = 0;
};

class ThreadAllocator {
 public:
  ~ThreadAllocator();
  ThreadAllocator(const ThreadAllocator&) = delete;
  ThreadAllocator& operator=(const ThreadAllocator&) = delete;

  // Allocates an object of `payload` bytes near `hint` (null: anywhere on this node).
  // Errors: OutOfRange for a payload over MaxPayloadBytes(); ResourceExhausted when the
  // node's capacity is used up and nothing is free; Unavailable/DeadlineExceeded when a
  // backup or the hint's primary does not answer; FailedPrecondition when the hint's
  // region has this node as primary but this node holds no copy of it.
  void Allocate(uint64_t payload, Addr hint, PtrDone done);
  // The part of Allocate that needs no message: a slot at hand, near a local hint.
  // Unavailable when only the slow path (a new block, a new region, another primary)
  // could serve it; other errors as Allocate.
  absl::StatusOr<FatPtr> TryAllocate(uint64_t payload, Addr hint = {});

  // Frees `object`. Errors: FailedPrecondition when it is not allocated or its
  // incarnation differs (a stale pointer or a second free), or when its region has this
  // node as primary but this node holds no copy; InvalidArgument when no object of that
  // size starts there.
  void Free(FatPtr object, StatusDone done);
  // Free of an object in a region this node holds. Synchronous.
  absl::Status FreeLocal(FatPtr object);

  // Creates a region now unless the node has one, before allocations need it (a node's
  // first region); `done` on this thread. Allocations that need a block meanwhile wait for it. Errors as
  // Allocate's for a new region; Unavailable while a slow step runs (ask again).
  void CreateRegionNow(StatusDone done);

  // Retires every owned block that is empty (after collecting other threads' frees)
  // and starts an end-of-epoch round if blocks wait for one and none is running. Rounds
  // also start by themselves when a block is retired; a failed round is retried by the
  // next slow-path step or Reclaim.
  void Reclaim();
  // Blocks retired and not yet released (waiting for or inside a round).
  size_t retired_blocks() const { return retired_waiting_.size() + retired_in_round_.size(); }
  bool round_running() const { return round_running_; }

  // The region is handed over (LocalRegion::leaving): drops this thread's blocks of it,
  // so no slot of it is taken here again. On this thread, after set_leaving.
  void ForgetRegion(RegionId id);

  EpochParticipant& epoch() { return epoch_; }
  Allocator& allocator() const { return *allocator_; }
  const ThreadAllocatorStats& stats() const { return stats_; }

 private:
  friend class Allocator;
  ThreadAllocator(Allocator* allocator, ThreadChannel* channel, EpochParticipant epoch);

  // Where an allocation that missed the fast path must get a block.
  struct Need {
    SizeClass size_class = 0;
    BlockPlace place;
  };
  struct Pending {
    uint64_t payload;
    Addr hint;
    PtrDone done;
  };
  // Intrusive list of owned blocks (SlabBlock::next/prev).
  struct BlockList {
    SlabBlock* head = nullptr;
    size_t size = 0;
    void Push(SlabBlock* b);
    void Remove(SlabBlock* b);
  };
  struct ClassState {
    SlabBlock* current = nullptr;
    BlockList available;  // with slots in local_free, not current
    BlockList full;       // no slot in local_free (remote frees may wait)
  };

  // The fast path; on a miss fills `need` and returns Unavailable.
  absl::StatusOr<FatPtr> AllocateHere(uint64_t payload, Addr hint, Need* need);
  absl::StatusOr<FatPtr> TakeSlot(ClassState& cls, SlabBlock* block, uint64_t payload);
  // A block of `cls` with a free slot in region `region` (kNullRegion: any), or null.
  SlabBlock* FindOwnedBlock(ClassState& cls, RegionId region);
  // The block of `cls` (the current one included) with a free slot, or remote frees to
  // collect, in a region on `hint`'s ring whose position is nearest `hint`'s, or null.
  SlabBlock* FindOwnedBlockNear(ClassState& cls, const LocalRegion& hint);
  void MakeCurrent(ClassState& cls, SlabBlock* block);
  // Puts an owned, non-current block on the list its free slots say (available/full);
  // Unlist takes it off its list.
  void Relist(ClassState& cls, SlabBlock* block);
  void Unlist(ClassState& cls, SlabBlock* block);
  void Own(SlabBlock* block);
  void OnSlotFreed(SlabBlock* block);
  void Retire(SlabBlock* block);
  LocalRegion* FindRegion(RegionId id);
  // FreeLocal once the block is known and cannot be released meanwhile.
  absl::Status FreeSlot(FatPtr object, LocalRegion* r, SlabBlock* b, const absl::StatusOr<SizeClass>& c);

  // Slow path: one Need at a time for the pending queue.
  void Enqueue(Pending pending);
  void ServeQueue();
  void GetBlock(const Need& need);
  void GetRegion(const Need& need);
  // Creates a region (near `near` on its ring, if given), has its backups hold it, adds
  // it; `then` gets its id or the error, on this thread, unless this object is gone.
  void NewRegion(std::optional<membership::RingPosition> near,
                 absl::AnyInvocable<void(absl::StatusOr<RegionId>)> then);
  void OnBlockReady(SlabBlock* block, const absl::Status& replicated);
  void FinishSlowStep(const absl::Status& error);
  void StartRound();
  void OnRoundDone(const absl::Status& status);
  // Sends block-table words to the region's backups without awaiting them.
  void SendBlockWords(const BlockTableUpdate& update);

  Allocator* const allocator_;
  ThreadChannel* const channel_;
  EpochParticipant epoch_;
  std::array<ClassState, kSizeClassCount> classes_;
  absl::flat_hash_map<RegionId, LocalRegion*> regions_;  // memo of BlockAllocator::FindRegion
  RegionId last_region_id_ = kNullRegion;  // the last region looked up, in front of regions_
  LocalRegion* last_region_ = nullptr;

  std::deque<Pending> queue_;
  bool slow_step_running_ = false;
  bool serving_ = false;  // inside ServeQueue
  std::vector<SlabBlock*> retired_waiting_;
  std::vector<SlabBlock*> retired_in_round_;
  bool round_running_ = false;
  // Alive while this object is: continuations of messages check it before touching it.
  std::shared_ptr<ThreadAllocator*> alive_;
  ThreadAllocatorStats stats_;
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_THREAD_ALLOCATOR_H_
