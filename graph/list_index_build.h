// BuildListIndex: gives an existing list its indexes (list_index.h), in several
// transactions, while readers go on and writers wait.
//
//   0. a transaction takes the list's build lease (ListHead::build_lease, 2 s): until it
//      is released or runs out, transactions that would change the list abort and are
//      retried (graph_tx.h), so the build cannot be overtaken by a hot list's writers;
//   1. read-only transactions read the whole list, a part each: every (id2, time) and
//      every block's last key and pointer; each also reads the vertex, and the parts
//      are one state of the list when all saw the same `changes`;
//   2. the two trees are written bottom up as new objects, nobody points to yet, a few
//      nodes per transaction (a commit record must fit one message);
//   3. one transaction links their roots into the list head — if the lease is still this
//      build's and `changes` is still what step 1 read — and releases the lease. When
//      it does not link them, the new nodes are freed; the next operation that walks the
//      list tries again.
// Between its transactions the build renews its lease (KeepBuildLease) while less than
// a second of it is left, so a build slower than the lease (a hub on a loaded machine)
// is not overtaken by writers and wasted; a build that lost its lease (it ran out
// between two renewals and another build took it) stops and frees what it made.
// O(list) work, done once per list; it runs where the list lives (a shipped operation).
// If the process dies between 2 and 3 the new nodes are lost (not reachable, not freed)
// and the list's writers wait until the lease runs out (2-3 s after the last renewal:
// leases are whole unix seconds).
#ifndef FARM_GRAPH_LIST_INDEX_BUILD_H_
#define FARM_GRAPH_LIST_INDEX_BUILD_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/list_index.h"
#include "graph/run_tx.h"
#include "kv/shard_map.h"

namespace farm::graph {

// Builds only for a list of more than `min_blocks` blocks (0: any non-empty list).
// Whether the list has its indexes at the end (built now, or before); false also when
// there is nothing to do (no such list, too short) and when it gave up because the list
// kept changing; errors of the transactions otherwise.
Task<absl::StatusOr<bool>> BuildListIndex(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                          ClientStats* stats, int64_t id1, int64_t type, ListIndexTuning tuning,
                                          uint32_t min_blocks = 0);

// A build's hold on the list (id1, type): the lease it took, `ends` at (unix seconds,
// ListHead::build_lease).
struct BuildLease {
  int64_t id1 = 0;
  int64_t type = 0;
  uint32_t ends = 0;
};

// Renews `lease` (one transaction on the list's vertex) when less than a second of it is
// left, and moves `ends`; nothing otherwise. Whether the build still holds the list:
// false when the list's lease is no longer `ends` (another build took it once it ran
// out) or the list is gone.
Task<absl::StatusOr<bool>> KeepBuildLease(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                          ClientStats* stats, BuildLease* lease);

}  // namespace farm::graph

#endif  // FARM_GRAPH_LIST_INDEX_BUILD_H_
