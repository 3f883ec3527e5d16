// BlockAllocator: the machine-wide level of the allocator (paper section 3.3). It holds
// the shared regions this node is primary of (LocalRegion), splits them into blocks of
// whole 1 MiB units, and hands blocks to the thread-private slab allocators.
//
// Every change of a block-table entry is made here, under one lock (blocks change a
// few times per MiB of objects), and reported to the caller as the words to send to
// the region's backups: a block is used only after they have them (thread_allocator.cc).
//
// Life of a block: Acquire (entries: slab + continuations; slot headers cleared when the
// units were used before) -> Publish once its backups have the entries -> owned by a
// thread -> empty: Unpublish, retired by its owner -> after an end-of-epoch round,
// Release (entries: free; the descriptor is deleted) -> Acquire again, maybe for another
// class. A block whose owner goes away is Abandoned (published again if it was retired)
// and adopted by the next thread that needs a block of its class. Units are never
// handed out twice: a unit is free in the table exactly when no SlabBlock covers it.
//
// Publication: LocalRegion::BlockAt finds only published blocks. A block is unpublished
// before the round that precedes its Release, so an operation that finds it (and may
// dereference it) started before that round and the Release waits for it; a block that
// never was published (its replication failed) may be Released at once.
//
// Thread safety: all methods on any thread. FindRegion is what frees use; regions are
// only added, never removed, while the BlockAllocator lives, so its result stays valid.
#ifndef FARM_ALLOC_BLOCK_ALLOCATOR_H_
#define FARM_ALLOC_BLOCK_ALLOCATOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "alloc/region_format.h"
#include "alloc/slab_block.h"
#include "farm/base/mutex.h"
#include "farm/base/published_map.h"
#include "farm/base/region.h"
#include "farm/fabric/work_request.h"

namespace farm::alloc {

// A shared region this node is primary of, with the private descriptors of its blocks.
class LocalRegion {
 public:
  // `region` is formatted (FormatRegion) or was scanned; `ring`/`position` are where its
  // id places it (membership::SplitRegion); `capability` is what peers present to reach
  // it (its fabric registration).
  LocalRegion(std::unique_ptr<Region> region, uint32_t ring, uint32_t position,
              RegionCapability capability);

  RegionId id() const { return region_->id(); }
  char* base() const { return region_->base(); }
  uint64_t bytes() const { return region_->size(); }
  uint32_t units() const { return units_; }
  uint32_t ring() const { return ring_; }
  uint32_t position() const { return position_; }
  Region& region() const { return *region_; }
  const RegionCapability& capability() const { return capability_; }

  // Frozen while the region is being re-replicated after a configuration change (a
  // backup lacks a copy, or a promoted copy is sent to every backup): no transaction may
  // lock its objects (the participant refuses, Aborted) and no block is carved in it, so
  // the copy sent is the region's state. Lock-free reads go on. Any thread.
  bool frozen() const { return frozen_.load(std::memory_order_acquire); }
  void set_frozen(bool frozen) { frozen_.store(frozen, std::memory_order_release); }
  // Leaving: another node became the region's primary (a member joined) and this node
  // hands the region over (node/failover.cc). Its thread allocators take no slot from it
  // any more and release none of its blocks (the block table is the new primary's);
  // transactions locked on it still finish here. Then BlockAllocator::Retire.
  bool leaving() const { return leaving_.load(std::memory_order_acquire); }
  void set_leaving(bool leaving) { leaving_.store(leaving, std::memory_order_release); }

  // The published slab block covering `offset`, or null. Any thread; the block stays
  // valid while the caller is inside the epoch operation it was found in (blocks are
  // unpublished, then deleted only after an end-of-epoch round).
  SlabBlock* BlockAt(uint64_t offset) const {
    const uint64_t unit = offset / kBlockUnitBytes;
    return unit < units_ ? blocks_[unit].load(std::memory_order_acquire) : nullptr;
  }

 private:
  friend class BlockAllocator;

  std::unique_ptr<Region> region_;
  const uint32_t units_;
  const uint32_t ring_;
  const uint32_t position_;
  const RegionCapability capability_;
  // Per unit: the block covering it. Written under the BlockAllocator lock.
  std::unique_ptr<std::atomic<SlabBlock*>[]> blocks_;
  // Owning pointers, by first unit. Guarded by the BlockAllocator lock.
  absl::flat_hash_map<uint32_t, std::unique_ptr<SlabBlock>> owned_;
  uint32_t free_units_ = 0;   // guarded by the BlockAllocator lock
  uint32_t search_from_ = 1;  // no free run starts below this (a hint)
  std::atomic<bool> frozen_{false};
  std::atomic<bool> leaving_{false};
  bool retired_ = false;  // guarded by the BlockAllocator lock: BlockAllocator::Retire
};

// Where a block should come from.
struct BlockPlace {
  enum class Kind { kAnywhere, kRegion, kNear };
  Kind kind = Kind::kAnywhere;
  RegionId region = kNullRegion;  // kRegion: exactly this region
  uint32_t ring = 0;              // kNear: the local region on this ring...
  uint32_t position = 0;          // ...whose position is closest to this one

  static BlockPlace Anywhere() { return {}; }
  static BlockPlace In(RegionId r) { return {Kind::kRegion, r, 0, 0}; }
  static BlockPlace Near(uint32_t ring, uint32_t position) { return {Kind::kNear, kNullRegion, ring, position}; }
};

// Block-table words to replicate: entries [first_unit, first_unit + words.size()).
struct BlockTableUpdate {
  RegionId region = kNullRegion;
  uint32_t first_unit = 0;
  std::vector<uint64_t> words;
};

struct BlockAllocatorStats {
  uint32_t regions = 0;
  uint64_t units = 0;       // over all regions, metadata units included
  uint64_t free_units = 0;
  uint64_t blocks = 0;      // slab blocks in use (owned, abandoned or retired)
  uint64_t adoptable = 0;
};

class BlockAllocator {
 public:
  BlockAllocator() = default;
  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;
  ~BlockAllocator();

  // Adds a region (taking it from `region`): formatted and empty, or rebuilt by a scan
  // (AdoptScanned adds its blocks). AlreadyExists for a region id held already, and
  // `region` is left to the caller.
  absl::Status AddRegion(std::unique_ptr<LocalRegion>& region);
  // The region with `id`, or null when this node holds no such region.
  LocalRegion* FindRegion(RegionId id) const;
  std::vector<LocalRegion*> Regions() const;
  // Hands region `id` over for good (its new primary has it: node/failover.cc): it is
  // found no more and gets no block, but the LocalRegion and its memory stay (thread
  // allocators and blocks may still point at them; nothing uses them). NotFound when not
  // held. A later AddRegion of the same id adds a new region.
  absl::Status Retire(RegionId id);

  // A new block of `size_class` at `place`; its table entries are written and returned
  // in `update` for the backups. The block has no owner and is not published yet.
  // ResourceExhausted when no region there has room (NotFound for a kRegion this node
  // does not hold).
  absl::StatusOr<SlabBlock*> Acquire(SizeClass size_class, const BlockPlace& place,
                                     BlockTableUpdate* update);
  // An abandoned or scanned block of `size_class` at `place` (kNear: on that ring), or
  // null. The caller becomes its owner. The block may be full.
  SlabBlock* Adopt(SizeClass size_class, const BlockPlace& place, ThreadAllocator* owner);
  // Makes a block findable by BlockAt (its backups have its entries) / unfindable (it
  // is about to be retired).
  void Publish(SlabBlock* block);
  void Unpublish(SlabBlock* block);
  // Gives up ownership of a block (published again if it was not).
  void Abandon(SlabBlock* block);
  // Frees the units of an empty block: its entries become free (returned in `update` for
  // the backups) and the SlabBlock is deleted. Precondition: the block is unpublished
  // and an end-of-epoch round started after that has completed, or it never was
  // published.
  void Release(SlabBlock* block, BlockTableUpdate* update);

  // Whether region `region` has a free run for a new block of `size_class` now (false for
  // a region this node does not hold). Only a snapshot: blocks are carved and released
  // meanwhile.
  bool HasRoom(RegionId region, SizeClass size_class) const;

  // Registers the blocks a scan found in `region` (already added) as adoptable;
  // `live[i]` lists the live slots of the i-th slab block in `firsts`.
  absl::Status AdoptScanned(RegionId region, const std::vector<uint32_t>& firsts,
                            const std::vector<std::vector<uint32_t>>& live);

  BlockAllocatorStats Stats() const;

 private:
  // First unit of a free run of `n` units in `r`, or -1.
  static int64_t FindFreeRun(const LocalRegion& r, uint32_t n);
  void SetPublished(SlabBlock* block, bool published) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  LocalRegion* ChooseRegion(uint32_t units, const BlockPlace& place) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  SlabBlock* Carve(LocalRegion* r, uint32_t first, SizeClass size_class, BlockTableUpdate* update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::vector<std::unique_ptr<LocalRegion>> regions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<RegionId, LocalRegion*> by_id_ ABSL_GUARDED_BY(mu_);
  // by_id_ for FindRegion, which takes no lock: every local lock-free read, commit and
  // free looks a region up (farm/base/published_map.h). Changed with by_id_, under mu_.
  PublishedMap<RegionId, LocalRegion*> found_;
  // Blocks without owner that still have live objects (or came from a scan), per class.
  std::vector<std::vector<SlabBlock*>> adoptable_ ABSL_GUARDED_BY(mu_) =
      std::vector<std::vector<SlabBlock*>>(kSizeClassCount);
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_BLOCK_ALLOCATOR_H_
