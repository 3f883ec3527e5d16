// The indexes of a long list, and the operations on one link of such a list inside a
// transaction, in time independent of the list's length (a hub of a million links).
//
// A list of more than ListIndexTuning::min_blocks blocks gets two B+trees (btree.h),
// allocated next to its vertex:
//   by_id2   id2 -> the link's time (key {0, id2}, value a = time);
//   by_key   each block's last (oldest) edge, as ListKey, -> the block's FatPtr.
// ListKey orders edges as the list does (time, then id2, descending) ascending, so a
// link's block is the block of by_key.Ceil(its key) — or the last block, for a key
// older than every edge. A link operation thus reads the vertex, about three nodes of
// each tree, the link's block and the head; it writes the head (invariant 2 of
// layout.h) and what it changes.
//
// Invariants, kept by every transaction that changes an indexed list (graph_tx.h routes
// them all here, and LoadLinksTx declines an indexed list):
//   1. by_id2 has exactly the list's links, each with its time;
//   2. by_key has exactly the list's blocks, each under its last edge's key and with
//      its current pointer (incarnation included);
//   3. the list's own invariants (layout.h); blocks an indexed list allocates are
//      kMaxBlockBytes, so they grow without moving; a block that moves or empties is
//      unlinked through its predecessor, found by by_key.Before.
// Lock-free readers use only the list (graph_reader.h); the indexes are read in
// transactions.
//
// An index is built for a list that already exists by BuildListIndex (list_index_build.h),
// in several transactions; the list's `changes` tell it whether the list changed meanwhile.
#ifndef FARM_GRAPH_LIST_INDEX_H_
#define FARM_GRAPH_LIST_INDEX_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/btree.h"
#include "graph/layout.h"
#include "graph/types.h"

namespace farm::graph {

struct ListIndexTuning {
  // A list of more blocks than this gets its indexes (after the operation that saw it).
  uint32_t min_blocks = 8;
  // Entries per tree node (0: as many as fit; tests set a few to make deep trees).
  uint16_t node_entries = 0;
  // Blocks one transaction of a build reads (list_index_build.h; its read set must
  // validate in one message per machine; tests set a few to build in many parts).
  uint32_t blocks_per_read = 1024;
  // A pause after each part a build reads (tests: a build slower than its lease).
  absl::Duration build_pause = absl::ZeroDuration();

  TreeShape id2_shape() const { return TreeShape{8, 8, node_entries}; }
  TreeShape key_shape() const { return TreeShape{16, 16, node_entries}; }
};

// Whether an index build holds the list (its writers wait: they abort, and retry).
inline bool BuildLeaseHeld(const ListHead& list, absl::Time now) {
  return list.build_lease != 0 && absl::FromUnixSeconds(list.build_lease) > now;
}

// An edge's place in list order, as an ascending tree key.
inline TreeKey ListKey(int64_t time, int64_t id2) { return TreeKey{~time, ~id2}; }
inline TreeKey Id2Key(int64_t id2) { return TreeKey{0, id2}; }

// One indexed list being read or changed in a transaction. `list` is the vertex's head
// of the list (its fields are updated by Finish); `hint` where new objects go.
class IndexedList {
 public:
  IndexedList(Tx& tx, int64_t id1, ListHead& list, Addr hint);

  // The link to id2 (hidden too).
  Task<absl::StatusOr<std::optional<Link>>> Get(int64_t id2);
  // addLink's upsert: true when the link is new; *visible_delta the change of the count.
  Task<absl::StatusOr<bool>> Upsert(const Link& link, int* visible_delta);
  // deleteLink: true when found; hides (or removes, expunge) a visible link.
  Task<absl::StatusOr<bool>> Delete(int64_t id2, bool expunge, int* visible_delta);

  // Writes the changed blocks, the head and the trees into the transaction, and the
  // new head, tail, blocks and roots into `list` (count and changes are the caller's).
  Task<absl::Status> Finish();
  // Bytes of objects the transaction will write so far (for the commit record's budget).
  uint64_t dirty_bytes() const;
  bool changed() const { return changed_; }
  // Tree nodes and blocks read (or made) so far.
  uint64_t objects_read() const { return blocks_.size() + by_id2_.nodes_read() + by_key_.nodes_read(); }

 private:
  struct Blk {
    ObjBuf* object = nullptr;
    FatPtr ptr;  // as pointers to it must name it (a new incarnation once bumped)
    Block block;
    bool dirty = false;
    bool freed = false;
  };

  Task<absl::StatusOr<Blk*>> Load(FatPtr ptr);
  Task<absl::StatusOr<Blk*>> NewBlock();
  // The block that holds `key`, or where it goes (nullptr: the list is empty).
  Task<absl::StatusOr<Blk*>> BlockFor(TreeKey key);
  // The edge of `id2` (whose time is `time`): its block and index.
  Task<absl::StatusOr<std::pair<Blk*, size_t>>> Locate(int64_t id2, int64_t time);
  Task<absl::Status> InsertEdge(Edge e);
  Task<absl::Status> RemoveEdge(Blk* b, size_t at);
  // After b's edges changed: moves it to a full-size object or splits it when they no
  // longer fit (or makes a new head, for an edge that went first into a full head).
  Task<absl::Status> Fit(Blk* b, bool went_first);
  // b leaves its place: `replacement` (or b's next, when null) takes it in the chain.
  Task<absl::Status> Unlink(Blk* b, TreeKey b_key, Blk* replacement);
  void MarkDirty(Blk* b);
  static TreeKey LastKey(const Blk& b) {
    return ListKey(b.block.edges.back().time, b.block.edges.back().id2);
  }

  Tx& tx_;
  int64_t id1_;
  ListHead& list_;
  Addr hint_;
  TxTree by_id2_;
  TxTree by_key_;
  std::deque<Blk> blocks_;
  absl::flat_hash_map<uint64_t, Blk*> by_address_;
  bool changed_ = false;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_LIST_INDEX_H_
