// Doorbells: how one thread, or a peer's WRITE with `notify`, wakes a parked thread.
//
// Each node keeps a DoorbellTable: a small shared-memory array of "armed" words (one
// per doorbell, a cache line each) plus one eventfd per doorbell. The shm backend hands
// both to peers so they can ring directly; the tcp responder rings on the peer's behalf;
// verbs will map a write-with-immediate completion onto the same wake-up.
//
// Invariants (an eventcount; both sides use sequentially consistent operations):
//   1. A waiter stores armed = 1, then checks for work, then waits on fd().
//   2. A ringer makes its work visible, then loads armed, and writes the eventfd only
//      if it was 1. So either the waiter's check sees the work or the ringer sees
//      armed = 1 and wakes it: no lost wake-up. A ring costs one load when not armed.
//   3. A slot's eventfd is created once and kept for the table's life, so peers may
//      cache it by doorbell id even after the doorbell is destroyed and its id reused.
#ifndef FARM_FABRIC_DOORBELL_H_
#define FARM_FABRIC_DOORBELL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "farm/base/region.h"
#include "farm/base/unique_fd.h"

namespace farm {

struct alignas(64) DoorbellSlot {
  std::atomic<uint32_t> armed;
};
static_assert(sizeof(DoorbellSlot) == 64);

// Rings a doorbell given its armed word and eventfd (invariant 2). Any thread.
void RingDoorbell(DoorbellSlot& slot, int event_fd);

class DoorbellTable;

// One doorbell, owned by the thread that parks on it. Ring() may be called from any
// thread. Destroying it frees the id for reuse.
class Doorbell {
 public:
  ~Doorbell();
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  uint32_t id() const { return id_; }
  int fd() const { return event_fd_; }

  // Waiter side: Arm before the last check for work, Disarm after waking (it drains the
  // eventfd). Owning thread only.
  void Arm();
  void Disarm();

  void Ring();

 private:
  friend class DoorbellTable;
  Doorbell(DoorbellTable* table, uint32_t id, DoorbellSlot* slot, int event_fd)
      : table_(table), id_(id), slot_(slot), event_fd_(event_fd) {}

  DoorbellTable* table_;
  uint32_t id_;
  DoorbellSlot* slot_;
  int event_fd_;
};

class DoorbellTable {
 public:
  static absl::StatusOr<std::unique_ptr<DoorbellTable>> Create(uint32_t capacity);

  // Fails ResourceExhausted when every id is in use. Thread-safe.
  absl::StatusOr<std::unique_ptr<Doorbell>> Allocate();

  // Rings doorbell `id` on behalf of a peer; ids never allocated are ignored.
  // Thread-safe.
  void Ring(uint32_t id);

  // The eventfd of an allocated-at-least-once id, or -1. Thread-safe.
  int event_fd(uint32_t id) const;

  uint32_t capacity() const { return capacity_; }
  // The shared memory holding the armed words, for peers to map.
  const Region& shared_slots() const { return slots_region_; }

 private:
  friend class Doorbell;
  DoorbellTable(Region slots_region, uint32_t capacity);
  void Release(uint32_t id);
  DoorbellSlot& slot(uint32_t id) const {
    return reinterpret_cast<DoorbellSlot*>(slots_region_.base())[id];
  }

  Region slots_region_;
  const uint32_t capacity_;
  // event_fds_[id] is written once (under mu_) before the id is first handed out and
  // read lock-free afterwards.
  std::unique_ptr<std::atomic<int>[]> event_fds_;
  mutable Mutex mu_;
  std::vector<UniqueFd> owned_fds_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> free_ids_ ABSL_GUARDED_BY(mu_);
  uint32_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace farm

#endif  // FARM_FABRIC_DOORBELL_H_
