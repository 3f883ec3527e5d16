// Node data over kMaxInlineNodeData (layout.h) lives in immutable chunk objects, each
// written by a transaction of its own (a commit record must fit one message) before the
// node's transaction links them in; chunks of a node whose transaction failed for good
// are freed again, by a transaction of their own.
//
// Threads: a worker thread's coroutines; `stats` (may be null) is that thread's.
#ifndef FARM_GRAPH_CHUNKS_H_
#define FARM_GRAPH_CHUNKS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/run_tx.h"
#include "kv/shard_map.h"

namespace farm::graph {

// `data` as chunk objects near `hint`, in order; empty for data that stays inline.
Task<absl::StatusOr<std::vector<FatPtr>>> WriteNodeChunks(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                                          ClientStats* stats, const std::string& data, Addr hint);
// Frees `chunks` (no node took them).
Task<absl::Status> FreeNodeChunks(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                  std::vector<FatPtr> chunks);

}  // namespace farm::graph

#endif  // FARM_GRAPH_CHUNKS_H_
