// NodeIdBlock: AddNode's ids, handed out from blocks reserved ahead, as an
// auto-increment allocates them (LinkBench's addNode: sequential ids).
//
// The id counter (index.h's kNextNodeIdKey: the last id reserved) advances by blocks: a
// reservation is an increment of the counter by the ids asked for plus kNodeIdBlock,
// shipped to the counter's primary and committed like any kv update. The machine that
// made it then hands its ids out from memory, in order, without a commit; before, every
// AddNode paid one commit for its id and one for its node. Every AddNode(s) sends its
// kTakeNodeIds to the machine of the counter's bucket (GraphClient), so one block serves
// the whole cluster and the ids stay sequential.
//
// Invariants:
//  1. An id is handed out only from a reservation this block made and whose increment
//     committed: no id is handed out twice, whichever machines hold blocks, whatever
//     crashes.
//  2. A block is used only while the counter, read lock-free just before, still holds
//     its last id: so an id handed out after another one completed is larger, and a
//     reservation by another machine (while the counter's primary moves) or a reset
//     (ResetNodeIds) makes the block be dropped. Resets run on the block's machine
//     (kResetNodeIds), which drops its block first: a reset to the id right after the
//     block leaves the counter where the block's own reservation left it.
//  3. One reservation or reset at a time per machine; a Take that finds one running
//     waits for it (polling every kWaitPoll).
//  4. A reservation that follows the block (the counter still at its last id) extends
//     it: the unused ids stay in use. A gap in the ids appears only when a block is
//     dropped (a crash of its machine, a move of the counter, invariant 2) — as an
//     auto-increment loses ids.
//
// Threads: shared by the worker threads of one machine (a mutex guards the block; it is
// never held across a co_await); each call on the calling thread with its own clients.
#ifndef FARM_GRAPH_NODE_IDS_H_
#define FARM_GRAPH_NODE_IDS_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/sync.h"
#include "graph/run_tx.h"
#include "kv/shard_map.h"
#include "kv/table_client.h"

namespace farm::graph {

// Ids a reservation takes beyond those its request asks for.
inline constexpr uint64_t kNodeIdBlock = 64;
// Ids one Take may ask for (a load's batch of nodes is far below).
inline constexpr uint64_t kMaxIdsPerTake = uint64_t{1} << 20;

struct NodeIdStats {
  uint64_t takes = 0;         // Takes answered
  uint64_t reservations = 0;  // increments of the counter
  uint64_t dropped = 0;       // blocks dropped because the counter moved (invariant 2)
  uint64_t waits = 0;         // polls while another reservation or reset ran
};

class NodeIdBlock {
 public:
  static constexpr absl::Duration kWaitPoll = absl::Microseconds(50);

  NodeIdBlock() = default;
  NodeIdBlock(const NodeIdBlock&) = delete;
  NodeIdBlock& operator=(const NodeIdBlock&) = delete;

  // The first of n consecutive new ids (1 <= n <= kMaxIdsPerTake, else InvalidArgument);
  // the reservation's error when one was needed and failed. `index`: the calling
  // thread's client of the id index.
  Task<absl::StatusOr<int64_t>> Take(Context& ctx, kv::TableClient& index, uint64_t n);

  // The next Take answers start_id (>= 1): drops the block and sets the counter in a
  // transaction (retried on conflicts).
  Task<absl::Status> Reset(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                           int64_t start_id);

  // Forgets the block, as a restart of this machine does (tests).
  void Forget();

  NodeIdStats stats() const;

 private:
  // The first id, or nothing when the block cannot serve n now (why: *busy, *stale).
  bool TakeFromBlock(int64_t counter, uint64_t seen_changes, uint64_t n, int64_t* first, bool* busy);

  mutable Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;  // next_..last_ are reserved and not handed out
  int64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_ ABSL_GUARDED_BY(mu_) = 0;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;   // a reservation or reset runs (invariant 3)
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;  // reservations and resets completed
  NodeIdStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_NODE_IDS_H_
