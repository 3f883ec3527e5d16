// Allocator: a node's memory allocator for the shared address space (paper section
// 3.3), the three levels together:
//   - ThreadAllocator (thread_allocator.h): one per thread, the slab allocators;
//   - BlockAllocator (block_allocator.h): machine-wide, blocks of 1 MiB units;
//   - the region allocator (here): creates a region when blocks run out, with an id
//     whose primary is this node — a ring at random and a position in this node's arc,
//     or, for a location hint, a position near the hint's on the hint's ring — formats
//     its metadata, registers it with the fabric (through AllocatorEnvironment) and has
//     its backups hold a copy before any block of it is used.
//
// Capacity: at most capacity_bytes of regions (a whole number of region_bytes regions);
// asking for more is ResourceExhausted, naming the limit.
//
// Thread safety: any thread. The Allocator must outlive its ThreadAllocators. It owns
// the memory of its regions, which stay registered with the fabric: destroy the fabric
// first (declare the Allocator before it).
#ifndef FARM_ALLOC_ALLOCATOR_H_
#define FARM_ALLOC_ALLOCATOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "alloc/block_allocator.h"
#include "alloc/epoch.h"
#include "alloc/thread_channel.h"
#include "farm/base/region.h"
#include "membership/placement.h"

namespace farm::alloc {

class ThreadAllocator;
struct RegionScan;

// What the allocator needs from the node it runs in. Any thread.
class AllocatorEnvironment {
 public:
  virtual ~AllocatorEnvironment() = default;
  // The placement of the current configuration (never null once the node serves).
  virtual std::shared_ptr<const membership::Placement> placement() const = 0;
  // Changes whenever placement() would return another placement: a per-thread cache
  // (PlacementCache) compares it — an atomic load — instead of taking the placement on
  // every lookup. 0 for an environment whose placement never changes.
  virtual uint64_t placement_generation() const { return 0; }
  // Makes a new region's memory reachable by peers (fabric registration); returns the
  // capability peers present to reach it.
  virtual absl::StatusOr<RegionCapability> RegisterRegion(const Region& region) = 0;
  // Revokes it again (a region given up before use).
  virtual absl::Status DeregisterRegion(RegionId region) = 0;
};

// One thread's copy of the placement, refreshed only when its generation moves: the
// lock-free read path finds a region's primary without a lock or a shared counter
// touched by every thread. Used on one thread only.
struct PlacementCache {
  std::shared_ptr<const membership::Placement> placement;
  uint64_t generation = ~uint64_t{0};
};

struct AllocatorOptions {
  NodeId self = 0;
  uint64_t region_bytes = kDefaultRegionSize;
  uint64_t capacity_bytes = 0;  // 0: one region
  RegionOptions region;
};

// Sets kRawLost on every live one-sided object of a scanned region (AdoptRegion).
void MarkOneSidedObjectsLost(char* base, const RegionScan& scan);

struct AllocatorStats {
  BlockAllocatorStats blocks;
  uint64_t regions_created = 0;
  uint64_t max_regions = 0;
};

class Allocator {
 public:
  // InvalidArgument for a region size the format cannot hold or a capacity under one
  // region. `environment` and `epochs` must outlive the Allocator.
  static absl::StatusOr<std::unique_ptr<Allocator>> Create(const AllocatorOptions& options,
                                                           AllocatorEnvironment* environment,
                                                           EpochManager* epochs);
  ~Allocator();

  // A slab allocator for the calling thread, sending through `channel` (which must
  // outlive it). ResourceExhausted when no epoch slot is left.
  absl::StatusOr<std::unique_ptr<ThreadAllocator>> NewThread(ThreadChannel* channel);

  // --- The region allocator (used by ThreadAllocator's slow path) ---
  // Creates, formats and registers a region this node is primary of: on `near`'s ring
  // close to its position when given, else on a random ring. The region is not in the
  // BlockAllocator until AddCreatedRegion (after its backups have it); DropCreatedRegion
  // gives its capacity back instead. `backups` receives its replicas after the primary.
  // Unavailable when this node is not (yet) a member of the current configuration.
  absl::StatusOr<std::unique_ptr<LocalRegion>> CreateRegion(
      std::optional<membership::RingPosition> near, std::vector<NodeId>* backups);
  absl::Status AddCreatedRegion(std::unique_ptr<LocalRegion> region);
  void DropCreatedRegion(std::unique_ptr<LocalRegion> region);

  // Recovery: takes over a region whose memory holds allocator state (a restarted
  // primary's, or a promoted backup's copy): checks its header, scans it and makes its
  // blocks adoptable. The region must already be registered with the fabric, under
  // `capability`. Every live one-sided object in it is marked lost (kRawLost,
  // farm/base/object_layout.h): one-sided writes reach only the primary that took them,
  // so this copy — a backup's, a restart's replay, a handed-over copy that later writes
  // may have missed — does not hold them.
  absl::Status AdoptRegion(std::unique_ptr<Region> region, RegionCapability capability = {});
  // A region handed over to a new primary (BlockAllocator::Retire): it no longer counts
  // against this node's capacity, so the node can create another. NotFound when not held.
  absl::Status RetireRegion(RegionId id);

  // The primary of `region` under the current placement, when it is another node (the
  // one to send requests for the region to). Unavailable before any configuration;
  // errors of Placement::Lookup; FailedPrecondition when this node is the primary but
  // holds no copy (recovery has not brought it here).
  absl::StatusOr<NodeId> RemotePrimary(RegionId region) const;
  // The same through the calling thread's cache (the hot path: lock-free reads).
  absl::StatusOr<NodeId> RemotePrimary(RegionId region, PlacementCache* cache) const;
  // The backups of `region` under the current placement (empty when unknown).
  std::vector<NodeId> BackupsOf(RegionId region) const;

  BlockAllocator& blocks() { return blocks_; }
  EpochManager& epochs() const { return *epochs_; }
  AllocatorEnvironment& environment() const { return *environment_; }
  const AllocatorOptions& options() const { return options_; }
  AllocatorStats Stats() const;

 private:
  Allocator(const AllocatorOptions& options, AllocatorEnvironment* environment, EpochManager* epochs);
  absl::StatusOr<RegionId> PickRegionId(const membership::Placement& placement,
                                        std::optional<membership::RingPosition> near);
  // Ids of regions being created (between PickRegionId and Add/DropCreatedRegion).
  bool BeginCreation(RegionId id);
  void EndCreation(RegionId id);

  const AllocatorOptions options_;
  const uint64_t max_regions_;
  AllocatorEnvironment* const environment_;
  EpochManager* const epochs_;
  BlockAllocator blocks_;
  std::atomic<uint64_t> regions_reserved_{0};  // created or being created
  std::atomic<uint64_t> regions_created_{0};
  Mutex creating_mu_;
  absl::flat_hash_set<RegionId> creating_ ABSL_GUARDED_BY(creating_mu_);
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_ALLOCATOR_H_
