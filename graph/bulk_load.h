// The graph's bulk writes — AddNodes (a load's nodes, or one AddNode) and LoadLinkLists
// (a load's batch of lists) — function-shipped by machine, as the link updates are
// (messages.h): the client groups the ids by the region of their index entries (the
// vertices live beside them, graph/index.h), sends one request per group with as many
// as fit kMaxShippedLoadBytes, all at once, and the machine of the group runs them as
// local transactions, several at once (their commits share the log's syncs and the
// backups' round trips). A transaction stops adding nodes or lists once it writes
// kMaxLoadBytesPerTx (txWriteBytes), so its commit record fits one message (65,504
// bytes) with the last one's and the index's Seal.
//
//   client    AddNodesTask: node data over kMaxInlineNodeData as chunks first (a
//             transaction each; several nodes' at once), then the ids (kTakeNodeIds, from the block of reserved
//             ids on the id counter's machine: node_ids.h), then kPutNodes requests. LoadListsTask:
//             lists sorted newest first; a list with a repeated id2 or over
//             kMaxListedLoadEdgeBytes of edges goes alone by GraphClient::LoadLinks, the
//             others in kLoadLists requests.
//   executor  ExecutePutNodes, ExecuteLoadLists: the request in parts of about one
//             transaction each (RunTx, retried on conflicts), run at once. A list
//             LoadListsTx declines (not empty, not this load's) is upserted (AddLinksTx).
//             Chunks of nodes a part failed to write are freed there.
//
// Failures: AddNodes' ids are taken before its nodes are written, so a failure leaves a
// gap in the ids (as an auto-increment does); a load is not atomic beyond one
// transaction; a request whose reply is lost (Unavailable) may or may not have been
// applied, and chunks of its nodes may then leak (never dangle).
//
// Threads: the client's (or executor's) worker thread; the client must outlive the
// tasks.
#ifndef FARM_GRAPH_BULK_LOAD_H_
#define FARM_GRAPH_BULK_LOAD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "graph/messages.h"
#include "graph/run_tx.h"
#include "graph/types.h"
#include "kv/shard_map.h"

namespace farm::graph {

class GraphClient;

// The write budget of one transaction of a bulk write (txWriteBytes); the last node or
// list it takes (at most about 12 KiB: a vertex moved, a block of at most
// kMaxListedLoadEdgeBytes, an insert into the id index displacing pairs over up to
// kv::kProbeLimit buckets) and the index's Seal may add as much again.
inline constexpr uint64_t kMaxLoadBytesPerTx = 24 * 1024;
// Nodes one transaction writes at most.
inline constexpr size_t kMaxNodesPerTx = 64;
// Lists with more edge bytes than this (the hub) are loaded alone, in steps.
inline constexpr uint64_t kMaxListedLoadEdgeBytes = 8 * 1024;

// The first of the consecutive ids the nodes got (node.id ignored).
Task<absl::StatusOr<int64_t>> AddNodesTask(GraphClient& client, ClientStats* stats, std::vector<Node> nodes);
// The number of new links (`load`: the load's token, nonzero).
Task<absl::StatusOr<uint64_t>> LoadListsTask(GraphClient& client, std::vector<LinkList> lists, uint64_t load);

Task<absl::StatusOr<ShipReply>> ExecutePutNodes(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                                ClientStats* stats, const ShipRequest& r);
Task<absl::StatusOr<ShipReply>> ExecuteLoadLists(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                                 ClientStats* stats, const ShipRequest& r);

}  // namespace farm::graph

#endif  // FARM_GRAPH_BULK_LOAD_H_
