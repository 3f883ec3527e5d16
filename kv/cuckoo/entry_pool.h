// EntryPool: the data table entries one worker thread owns (Nessie's pre-assigned free
// memory: only the owner writes a new incarnation into an entry), per size class: which
// are free and the version each was last written with.
//
// An entry leaves the pool by Take (the caller writes incarnation `version` into it and
// installs it in at most one ITE) and comes back by Return (never installed, or its ITE
// CAS was rolled back), by Free (this thread recycled its own entry) or by Reclaim (a
// scan of the thread's own entries for ones other clients marked recycled,
// kv/cuckoo/entry_format.h invariant 3).
//
// Threads: the owning worker thread only. A pool of a node that holds no data table (a
// compute-only member) owns no entries: Take always fails.
#ifndef FARM_KV_CUCKOO_ENTRY_POOL_H_
#define FARM_KV_CUCKOO_ENTRY_POOL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/cuckoo/cuckoo_map.h"

namespace farm::kv::cuckoo {

class EntryPool {
 public:
  // The entries of slice `slice` of data table `table` of `map` (none for table -1).
  EntryPool(const CuckooMap& map, int table, size_t slice);

  // A free entry of the class with its next version, or nullopt when none is free.
  std::optional<EntryRef> Take(uint32_t size_class);
  // An entry taken but no longer named by any ITE (never installed, or rolled back).
  void Return(const EntryRef& ref) { Free(ref); }
  // An owned entry this thread marked recycled.
  void Free(const EntryRef& ref);
  bool Owns(const EntryRef& ref) const;
  // Scans the class's owned entries (local READs) and frees those marked recycled by
  // other clients; returns how many it freed.
  Task<absl::StatusOr<uint32_t>> Reclaim(Context& ctx, uint32_t size_class);

  uint32_t free_count(uint32_t size_class) const { return static_cast<uint32_t>(free_[size_class].size()); }

 private:
  const CuckooMap& map_;
  const int table_;
  std::array<uint32_t, kSizeClasses> first_{};  // the first owned entry of each class
  std::array<uint32_t, kSizeClasses> count_{};
  std::array<std::vector<uint32_t>, kSizeClasses> free_;      // owned indices (0 .. count)
  std::array<std::vector<uint32_t>, kSizeClasses> version_;   // last version written
  std::array<std::vector<uint8_t>, kSizeClasses> is_free_;
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_ENTRY_POOL_H_
