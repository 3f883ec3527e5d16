// BuildListIndex: gives an existing list its indexes (list_index.h), in several
// transactions, without stopping its readers or writers.
//
//   1. one read-only transaction reads the whole list: every (id2, time) and every
//      block's last key and pointer, and the list's `changes`;
//   2. the two trees are written bottom up as new objects, nobody points to yet, a few
//      nodes per transaction (a commit record must fit one message);
//   3. one transaction links their roots into the list head — if `changes` is still
//      what step 1 read (no transaction changed the list meanwhile) and the list has no
//      indexes yet. Otherwise the new nodes are freed and the build starts again, up to
//      kAttempts times; after that the list stays as it was (a later operation that
//      walks it tries again).
// O(list) work, done once per list; it runs where the list lives (a shipped operation).
// If the process dies between 2 and 3 the new nodes are lost (not reachable, not freed).
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

// OK also when there is nothing to do (no such list, already indexed) and when it gave
// up because the list kept changing; errors of the transactions otherwise.
Task<absl::Status> BuildListIndex(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                  int64_t id1, int64_t type, ListIndexTuning tuning);

}  // namespace farm::graph

#endif  // FARM_GRAPH_LIST_INDEX_BUILD_H_
