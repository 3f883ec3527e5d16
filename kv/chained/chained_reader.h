// ChainedReader: one worker thread's lock-free lookups in the chained table
// (invariants in kv/chained/chained_ops.h). The reader keeps, per partition, the
// tables it last saw named by the root (a view: current and, while expanding, next),
// starting from the initial table without reading anything. A lookup READs the key's
// head in the view's current table: one READ when the key (or its absence) is there.
// A head marked moved sends it to the next table's head; a moved head with no next
// table in the view, or a head that fails its incarnation check (its table was freed
// after an expansion ended), refreshes the view (a READ of the root, and of a
// directory the machine has not cached) and restarts. A chain is followed block by
// block; an out-of-line value is READ after its slot.
//
// Linearizability (numbers are chained_ops.h's invariants). Each object copy is
// consistent on its own (the object read rule), read at one instant.
//   - A head H of table T read not moved at t1: T is the partition's current table at
//     t1 (invariant 5: a table stops being current only once every head of it is
//     moved, and moved heads stay moved until freed; a freed head fails the read), or
//     T is the next table and the key's old head was moved before t1 (the lookup read
//     it moved); either way H is the key's bucket at t1 (invariant 1).
//   - Found in H at t1: the table held the pair at t1. Out of line: the value object
//     is read later; values are immutable (invariant 6), so if its incarnation still
//     matches, its bytes are the value the slot named at t1; else restart.
//   - Found in a block read at t2: a block that passes its incarnation check is still
//     in its bucket's chain (blocks leave a chain only by being freed), and its copy is
//     unlocked, so no committed transaction has an unapplied write to it: the pair was
//     in the bucket at t2.
//   - Absent: the head, then every block, then the head again (t3); if the head's
//     version is unchanged the bucket did not change between t1 and t3 (invariant 3:
//     every change of a chain writes the head, and the head is locked from before any
//     of the change's writes is applied until after all are), so the copies read
//     between form the bucket's state, which lacks the key: linearize at t3. A changed
//     version restarts the lookup. A head with no chain needs no second READ.
// Restarts happen only when an expansion step, a chain change or a value replacement
// meets the lookup; after kMaxRestarts a lookup fails with DeadlineExceeded.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// reader must outlive its lookups in flight. Lookup states are pooled (their key and
// object buffers are reused), so a lookup allocates nothing once the pool is warm
// except what lockFreeRead does below; a view refresh (rare: after an expansion step)
// runs as a coroutine.
#ifndef FARM_KV_CHAINED_CHAINED_READER_H_
#define FARM_KV_CHAINED_CHAINED_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/chained/partition_map.h"
#include "kv/kv_client.h"
#include "kv/lookup_pool.h"

namespace farm::kv::chained {

// The reader's own figures, beyond LookupStats.
struct ChainStats {
  uint64_t head_reads = 0;     // READs of heads (the next table's too)
  uint64_t block_reads = 0;    // READs of overflow blocks
  uint64_t recheck_reads = 0;  // second READs of a head, after a chain, for an absent key
  uint64_t value_reads = 0;    // out-of-line values
  uint64_t root_reads = 0;     // view refreshes (root and directories)
  uint64_t next_table = 0;     // lookups sent on to the next table by a moved head
};

// A partition's tables as this reader last saw the root name them.
struct PartitionView {
  std::shared_ptr<const BucketTable> current;
  std::shared_ptr<const BucketTable> next;  // null: not expanding (as far as the view knows)
};

class ChainedReader {
 public:
  static constexpr uint32_t kMaxRestarts = 64;

  ChainedReader(Context& ctx, ChainedTable table);
  ~ChainedReader();
  ChainedReader(const ChainedReader&) = delete;
  ChainedReader& operator=(const ChainedReader&) = delete;

  void Get(absl::string_view key, GetDone done);
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done);

  // The partition's view after READing its root now (for scans and tests).
  Task<absl::StatusOr<PartitionView>> Refresh(uint32_t partition);

  const LookupStats& stats() const { return stats_; }
  const ChainStats& chain_stats() const { return chain_; }

 private:
  struct Lookup;
  enum class Stage : uint8_t { kHead, kBlock, kValue, kRecheck };

  // One attempt from the partition's current view: READs the key's head.
  void Attempt(Lookup* l);
  void Read(Lookup* l, Stage stage, FatPtr object);
  void OnRead(Lookup* l, absl::StatusOr<LockFreeObject> r);
  // Scans the bucket object in l->object from l->next_slot on; READs a value, the next
  // block or the head again, or finishes.
  void Scan(Lookup* l);
  void Restart(Lookup* l, bool refresh);

  Context& ctx_;
  const ChainedTable table_;
  std::vector<PartitionView> views_;  // index = partition
  LookupPool<Lookup> pool_;
  LookupStats stats_;
  ChainStats chain_;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_READER_H_
