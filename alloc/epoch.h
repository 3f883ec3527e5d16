// EpochManager: the machine-level half of FaRM's epoch-based reclamation (paper section
// 3.5, "end of epoch"). Freed memory may be reused for another object size only once
// every operation (transaction, lock-free read) that could still hold a pointer into it
// has ended. Threads bracket each operation with EpochParticipant::Enter/Exit; a
// reclaimer asks AwaitQuiescence to tell it when every operation that started before
// the request has ended. end_of_epoch.h runs the same request on every machine.
//
// One EpochManager per machine, owned by the node and passed to whoever needs it (no
// globals). It owns a fixed array of participant slots, one per registered thread.
//
// Threads:
//   - Register, AwaitQuiescence and the accessors: any thread.
//   - An EpochParticipant is used by one thread at a time (it may be handed over).
//     Enter and Exit take no locks, allocate nothing and make no system calls.
//   - AwaitQuiescence's `done` runs on the given loop's thread, posted (never inline).
//
// Lifetimes: every EpochParticipant must be destroyed before its EpochManager
// (destroying one inside an operation ends the operation, which completes the waits it
// held). On destruction of the manager, waiters still pending are dropped without
// running (their callbacks are destroyed on the destroying thread); with every
// participant gone first none can be pending, so this only matters to owners that tear
// down out of order. Callbacks already posted to their loop run as usual. A loop given
// to AwaitQuiescence must outlive the wait.
//
// Invariants:
//   1. The global epoch starts at 1 and only grows; AwaitQuiescence advances it by one
//      (e -> e+1, its "target"). A slot's state is kIdle (0) or the epoch its operation
//      runs in (>= 1); only its participant writes it.
//   2. Enter publishes epoch e in the slot with a seq_cst store, then reloads the epoch
//      (seq_cst) and republishes until the two agree. A quiescence check advances the
//      epoch (seq_cst RMW) before it loads slots (seq_cst), so: either the participant's
//      reload saw the new epoch (and publishes >= target; it synchronised with the
//      advance, so it reads only what was published before the request), or its store
//      precedes the check's load in the seq_cst order and the check sees it busy at an
//      epoch < target. A check therefore never misses an operation that could read
//      what the reclaimer unlinked before calling AwaitQuiescence.
//   3. A waiter for target t completes once every slot is idle or >= t. Completion is
//      monotone in t: waiters complete oldest first.
//   4. No lost wake-up (Dekker): AwaitQuiescence stores the pending target (seq_cst),
//      then checks slots; Exit stores kIdle (seq_cst), then loads the pending target.
//      Either the check sees the slot idle or Exit sees the target and re-checks. An
//      Exit whose epoch is >= the pending target cannot complete anything, so it costs
//      one load. Enter re-checks too when it republishes (a check may have seen its
//      stale epoch).
//   5. Nesting: only the outermost Enter publishes and only the outermost Exit clears;
//      the depth lives in the participant (one thread at a time), not in the slot.
//
// Cost: Enter is one seq_cst store (xchg on x86) and two loads of the epoch; Exit is one
// seq_cst store and one load of the pending target. The mutex is taken only by
// AwaitQuiescence, by an Exit that may complete a pending waiter, and by Enter in the
// rare republish case.
#ifndef FARM_ALLOC_EPOCH_H_
#define FARM_ALLOC_EPOCH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "farm/event/event_loop.h"

namespace farm::alloc {

class EpochManager;

namespace epoch_internal {

inline constexpr uint64_t kIdle = 0;

// One per registered thread, a cache line each so that participants do not share lines.
struct alignas(64) Slot {
  // kIdle, or the epoch of the operation in progress (invariant 1).
  std::atomic<uint64_t> state{kIdle};
  // Claimed by Register (CAS false -> true), released by the participant's destructor.
  std::atomic<bool> registered{false};
};
static_assert(sizeof(Slot) == 64);

}  // namespace epoch_internal

// An owning handle to one participant slot. Movable, not copyable; an empty
// (default-constructed or moved-from) handle must not Enter. Destroying a handle inside
// an operation ends the operation first.
class EpochParticipant {
 public:
  EpochParticipant() = default;
  EpochParticipant(EpochParticipant&& other) noexcept;
  EpochParticipant& operator=(EpochParticipant&& other) noexcept;
  EpochParticipant(const EpochParticipant&) = delete;
  EpochParticipant& operator=(const EpochParticipant&) = delete;
  ~EpochParticipant();

  // Starts an operation (lockFreeStart, txCreate). Nests; only the outermost publishes.
  void Enter();
  // Ends the innermost operation; the outermost Exit marks the slot idle. An Exit
  // without a matching Enter is ignored.
  void Exit();

  bool valid() const { return manager_ != nullptr; }
  // True between the outermost Enter and its Exit.
  bool inside() const { return depth_ > 0; }
  uint32_t depth() const { return depth_; }
  // The epoch the current operation runs in (0 when outside).
  uint64_t epoch() const { return published_; }
  size_t slot_index() const;

 private:
  friend class EpochManager;
  EpochParticipant(EpochManager* manager, epoch_internal::Slot* slot)
      : manager_(manager), slot_(slot) {}
  void Release();

  EpochManager* manager_ = nullptr;
  epoch_internal::Slot* slot_ = nullptr;
  uint32_t depth_ = 0;
  uint64_t published_ = epoch_internal::kIdle;
};

// Brackets one operation: Enter on construction, Exit on destruction.
class EpochGuard {
 public:
  explicit EpochGuard(EpochParticipant& participant) : participant_(participant) {
    participant_.Enter();
  }
  ~EpochGuard() { participant_.Exit(); }
  EpochGuard(const EpochGuard&) = delete;
  EpochGuard& operator=(const EpochGuard&) = delete;

 private:
  EpochParticipant& participant_;
};

class EpochManager {
 public:
  static constexpr size_t kDefaultCapacity = 256;

  explicit EpochManager(size_t capacity = kDefaultCapacity);
  ~EpochManager();
  EpochManager(const EpochManager&) = delete;
  EpochManager& operator=(const EpochManager&) = delete;

  // Claims a free slot. ResourceExhausted when all `capacity` slots are registered.
  absl::StatusOr<EpochParticipant> Register();

  // One end-of-epoch request on this machine: advances the epoch from e to e+1 and
  // posts `done` to `loop` once every operation that started before this call has
  // ended, i.e. every slot is idle or at epoch >= e+1. Checks at once, then again when
  // a participant that can matter exits; never polls. Any number of waiters. A thread
  // that calls this from inside an operation delays its own `done` until it exits.
  void AwaitQuiescence(EventLoop* loop, absl::AnyInvocable<void()> done);

  // --- Stats and tests; any thread, a snapshot ---
  uint64_t current_epoch() const { return epoch_.load(std::memory_order_acquire); }
  size_t capacity() const { return capacity_; }
  size_t registered_participants() const { return registered_.load(std::memory_order_relaxed); }
  // Participants inside an operation.
  size_t active_participants() const;
  // AwaitQuiescence requests not completed yet.
  size_t pending_waiters() const;

 private:
  friend class EpochParticipant;
  struct Waiter {
    uint64_t target;
    EventLoop* loop;
    absl::AnyInvocable<void()> done;
  };

  // Enter's publication loop (invariant 2); returns the epoch published.
  uint64_t Publish(epoch_internal::Slot& slot) {
    uint64_t epoch = epoch_.load(std::memory_order_relaxed);
    const uint64_t first = epoch;
    for (;;) {
      slot.state.store(epoch, std::memory_order_seq_cst);
      const uint64_t now = epoch_.load(std::memory_order_seq_cst);
      if (now == epoch) break;
      epoch = now;
    }
    // A check may have seen `first` busy; nothing else would make it look again.
    if (epoch != first && MayUnblockWaiter(first)) CheckWaiters();
    return epoch;
  }
  // Exit's slow path and Enter's re-check: completes the waiters now satisfied.
  void CheckWaiters();
  // Whether an Exit (or republish) from `epoch` may complete a waiter (invariant 4).
  bool MayUnblockWaiter(uint64_t epoch) const {
    const uint64_t target = pending_target_.load(std::memory_order_seq_cst);
    return target != 0 && epoch < target;
  }
  // The smallest epoch of an operation in progress, or UINT64_MAX when all are idle.
  uint64_t OldestActiveEpoch() const;
  void Unregister(epoch_internal::Slot& slot);
  size_t IndexOf(const epoch_internal::Slot* slot) const { return slot - slots_.get(); }

  const size_t capacity_;
  const std::unique_ptr<epoch_internal::Slot[]> slots_;
  // One past the highest slot ever registered: checks scan [0, high_water_).
  std::atomic<size_t> high_water_{0};
  std::atomic<size_t> registered_{0};
  std::atomic<uint64_t> epoch_{1};
  // The newest pending waiter's target (the largest, invariant 3), or 0 when none.
  std::atomic<uint64_t> pending_target_{0};

  // On its own line: written while waiters are pending, when Enter and Exit still read
  // epoch_ and pending_target_ above.
  alignas(64) mutable Mutex mu_;
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);  // by increasing target
};

inline void EpochParticipant::Enter() {
  if (depth_++ > 0) return;
  published_ = manager_->Publish(*slot_);
}

inline void EpochParticipant::Exit() {
  if (depth_ == 0) return;
  if (--depth_ > 0) return;
  slot_->state.store(epoch_internal::kIdle, std::memory_order_seq_cst);
  const uint64_t was = published_;
  published_ = epoch_internal::kIdle;
  if (manager_->MayUnblockWaiter(was)) manager_->CheckWaiters();
}

}  // namespace farm::alloc

#endif  // FARM_ALLOC_EPOCH_H_
