// EntryPool: the data table entries one worker thread owns (Nessie's pre-assigned free
// memory: only the owner writes a new incarnation into an entry), per size class: which
// are free and the version each was last written with. A thread owns one slice of its
// own node's table; a thread of a compute-only member owns a guest slice of each table
// it claimed (kv/cuckoo/cuckoo_map.h), used in turn.
//
// An entry leaves the pool by Take (the caller writes incarnation `version` into it and
// installs it in at most one ITE) and comes back by Return (never installed, or its ITE
// CAS was rolled back), by Free (this thread recycled its own entry) or by Reclaim (a
// scan of the thread's own entries for ones other clients marked recycled,
// kv/cuckoo/entry_format.h invariant 3).
//
// Threads: the owning worker thread only. With no slice (a compute-only member that
// claimed none) Take always fails.
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

// A slice of a data table: `slice` of table `table` (CuckooMap::nodes()).
struct SliceRef {
  int table = -1;
  uint32_t slice = 0;
};

class EntryPool {
 public:
  EntryPool(const CuckooMap& map, const std::vector<SliceRef>& slices);

  // A free entry of the class with its next version, or nullopt when none is free.
  std::optional<EntryRef> Take(uint32_t size_class);
  // An entry taken but no longer named by any ITE (never installed, or rolled back).
  void Return(const EntryRef& ref) { Free(ref); }
  // An owned entry this thread marked recycled (others are left to their owners).
  void Free(const EntryRef& ref);
  // Scans the class's owned entries (READs, local for a thread's own node) and frees
  // those marked recycled by other clients; returns how many it freed.
  Task<absl::StatusOr<uint32_t>> Reclaim(Context& ctx, uint32_t size_class);

 private:
  struct Owned {  // one slice's entries of one class
    uint32_t table = 0;
    uint32_t first = 0;  // the first entry's index in the table
    uint32_t count = 0;
    std::vector<uint32_t> free;     // indices 0 .. count-1
    std::vector<uint32_t> version;  // last version written
    std::vector<uint8_t> is_free;
  };
  Owned* Find(const EntryRef& ref);

  const CuckooMap& map_;
  std::array<std::vector<Owned>, kSizeClasses> owned_;
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_ENTRY_POOL_H_
