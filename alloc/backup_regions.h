// BackupRegions: the copies of other nodes' regions that this node holds as a backup
// (paper section 3.3: "information about region and block allocations is replicated at
// allocation time"). A copy is created when its primary creates the region and receives
// every block-table change; the transaction layer will write committed objects into it,
// and recovery promotes it (Allocator::AdoptRegion).
//
// A copy can also be received whole from a region's primary (region_copy.h, failover's
// re-replication): Reset empties it, WriteBytes fills it in.
//
// Block-table words from one primary may arrive out of order (they travel on different
// threads' rings). Generations order them: a word is applied when its generation is
// newer than the entry's, or equal and it frees the unit (the release that ends the
// assignment of the same generation). A block assigned anew after earlier use has its
// slot headers cleared, as on the primary (BlockAllocator::Carve). A release that never
// arrived (the primary does not retry them) must not leave half a block behind: a newer
// entry over a unit of an older block frees that block's other units, so the table
// always scans.
//
// Thread safety: any thread.
#ifndef FARM_ALLOC_BACKUP_REGIONS_H_
#define FARM_ALLOC_BACKUP_REGIONS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/base/mutex.h"
#include "farm/base/published_map.h"
#include "farm/base/region.h"

namespace farm::alloc {

class BackupRegions {
 public:
  explicit BackupRegions(RegionOptions options = {}) : options_(options) {}

  // Holds a new, formatted copy of `region` created by `primary` (idempotent for the
  // same primary and size: a retried request). InvalidArgument for a size the format
  // cannot hold; AlreadyExists when a copy of that id from another primary or of
  // another size is held (two nodes must never merge into one copy).
  absl::Status Create(RegionId region, uint64_t bytes, NodeId primary);
  // Holds an empty, formatted copy of `region` (as Create leaves a new one) whose
  // primary is `primary` from now on: a new copy, or the one held, zeroed (its pages go
  // back to the OS) and formatted afresh. The held copy stays the same Region object, so
  // pointers from Find stay valid — but nobody may use its memory meanwhile (the caller
  // holds the region frozen). InvalidArgument for a size the format cannot hold;
  // FailedPrecondition when the copy held has another size (nothing changes).
  absl::Status Reset(RegionId region, uint64_t bytes, NodeId primary);
  // Writes `bytes` into the copy of `region` at `offset`. NotFound for a region not
  // held; InvalidArgument when they run past the copy (nothing is written).
  absl::Status WriteBytes(RegionId region, uint64_t offset, absl::string_view bytes);
  // Applies block-table words [first_unit, first_unit + words.size()). NotFound for a
  // region not held; InvalidArgument for a word that is not valid at its unit (nothing
  // is applied then).
  absl::Status Apply(RegionId region, uint32_t first_unit, std::span<const uint64_t> words);

  // The copy of `region`, or null. Valid while this object lives (a dropped copy stays
  // mapped; one handed over by Take lives as long as its taker keeps it). No lock: every
  // backup apply and commit looks copies up (farm/base/published_map.h).
  const Region* Find(RegionId region) const;
  std::vector<RegionId> Held() const;
  // The node that created `region`'s copy held here, or the one it was last reset for
  // (kInvalidNode when none is held).
  NodeId CreatorOf(RegionId region) const;
  // Replay of a promotion (failover): the copy of `region` is `primary`'s from now on
  // (a restart takes a region back when its own). NotFound when not held.
  absl::Status SetPrimary(RegionId region, NodeId primary);
  // Recovery: hands the copy of `region` over (null when not held) — a restarted node's
  // own regions, rebuilt here from its log, go to its allocator.
  std::unique_ptr<Region> Take(RegionId region);
  // Failover: this node is no longer in the region's replica set, so its copy goes
  // stale and must never serve (be promoted) again: it is found no more. The memory
  // stays mapped until this object goes (other threads may be using it right now).
  // False when not held.
  bool Drop(RegionId region);

 private:
  // Frees the units of the block that `unit` belongs to before an update rewrites it,
  // except those in [skip_from, skip_to) that the update itself rewrites.
  static void FreeStaleBlock(char* base, uint32_t units, uint32_t unit, uint32_t skip_from,
                             uint32_t skip_to);

  const RegionOptions options_;
  mutable Mutex mu_;
  struct Copy {
    std::unique_ptr<Region> region;
    NodeId primary;  // the node that created the region, or sent its copy (Reset)
  };
  // copies_ and found_ change together: Hold and Forget.
  void Hold(RegionId region, Copy copy) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(RegionId region) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::flat_hash_map<RegionId, Copy> copies_ ABSL_GUARDED_BY(mu_);
  PublishedMap<RegionId, const Region*> found_;  // copies_' regions, for Find
  std::vector<std::unique_ptr<Region>> dropped_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_BACKUP_REGIONS_H_
