// RegionTable: the registered regions of one node, as a NIC's memory-region table.
//
// The table lives in shared memory (a memfd) so that shm peers can validate a
// capability against the owner's current registration on every op, and revocation by
// the owner takes effect for them at once. The tcp responder validates with the same
// code. Process-local data (where the region is mapped here) sits beside it.
//
// Invariants:
//   1. rkey = (48 random bits << 16) | slot, never 0. The slot index makes validation
//      O(1); the random bits make keys unguessable and unique per registration, so a
//      reused slot never validates an old key.
//   2. A slot's fields are written, then its rkey is stored with release order;
//      deregistration stores rkey 0. A reader loads rkey (acquire), the fields, then
//      rkey again: equal and non-zero means the fields belong to that registration.
//   3. lkey = slot index; a local buffer is valid when it lies inside the slot's region.
#ifndef FARM_FABRIC_REGION_TABLE_H_
#define FARM_FABRIC_REGION_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "farm/base/region.h"
#include "farm/fabric/work_request.h"

namespace farm {

// One slot of the shared table. Accessed only through std::atomic_ref.
struct alignas(32) SharedRegionSlot {
  uint64_t rkey;
  uint64_t length;
  uint32_t region;
  uint32_t reserved;
  uint64_t reserved2;
};
static_assert(sizeof(SharedRegionSlot) == 32);

inline constexpr uint32_t kMaxRegionSlots = 1u << 16;

// Validates an rkey against a (possibly remote, mapped) shared table. Returns the
// region's length on success, 0 when the key is not currently valid for `region`.
uint64_t ValidateRkey(const SharedRegionSlot* slots, uint32_t capacity, RegionId region,
                      uint64_t rkey);

inline uint32_t RkeySlot(uint64_t rkey) { return static_cast<uint32_t>(rkey & 0xFFFF); }

class RegionTable {
 public:
  static absl::StatusOr<std::unique_ptr<RegionTable>> Create(uint32_t capacity);

  // Thread-safe. Errors: ResourceExhausted (table full), AlreadyExists (id registered).
  absl::StatusOr<RegisteredRegion> Register(const Region& region);
  // Thread-safe. NotFound when the id is not registered.
  absl::Status Deregister(RegionId region);

  // Where `region`'s bytes [offset, offset + length) are mapped in this process, when
  // `rkey` is its current key and the range is inside it; nullptr otherwise.
  // Lock-free; any thread.
  char* Resolve(RegionId region, uint64_t rkey, uint64_t offset, uint64_t length) const;

  // True when [addr, addr + length) lies inside the region registered under `lkey`.
  bool CheckLocal(uint32_t lkey, const void* addr, uint64_t length) const;

  uint32_t capacity() const { return capacity_; }
  const SharedRegionSlot* shared_slots() const {
    return reinterpret_cast<const SharedRegionSlot*>(shared_.base());
  }
  // The shared memory holding the slots, for shm peers to map read-only in spirit.
  const Region& shared_memory() const { return shared_; }

 private:
  RegionTable(Region shared, uint32_t capacity);
  SharedRegionSlot* slots() const { return reinterpret_cast<SharedRegionSlot*>(shared_.base()); }

  Region shared_;
  const uint32_t capacity_;
  // Process-local base address per slot; written before the slot's rkey is published.
  std::unique_ptr<std::atomic<char*>[]> bases_;
  Mutex mu_;
  std::vector<uint32_t> free_slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm

#endif  // FARM_FABRIC_REGION_TABLE_H_
