// The graph's operations inside a FaRM transaction: every update of LinkBench, and the
// reads assoc_get needs. Strict serializability comes from the transaction; these
// functions keep the formats' invariants (layout.h) and LinkBench's contract (store.h):
// a list's count is its number of visible links, written in the transaction that
// changes a link's visibility.
//
// Each function reads what it needs through txRead and leaves its writes in the
// transaction; the caller commits (after index_writes.Seal()) and retries on Aborted or
// FailedPrecondition (an object freed under the transaction). Errors of the operation
// itself (InvalidArgument) come before anything is written.
//
// Cost: an operation on a link of a short list reads the whole list of its (id1, type)
// — every block — to find the link by id2; a long list has indexes (list_index.h), and
// an operation on one of its links reads a few tree nodes and blocks. `walked`, when
// given, is set to the number of blocks of an unindexed list the operation read whole
// (0 otherwise): the caller builds the indexes of a list that has grown long
// (list_index_build.h).
#ifndef FARM_GRAPH_GRAPH_TX_H_
#define FARM_GRAPH_GRAPH_TX_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/layout.h"
#include "graph/types.h"
#include "kv/shard_map.h"
#include "kv/table_ops.h"

namespace farm::graph {

struct ClientStats;  // run_tx.h

// What one transaction works with: the index's map and its bucket writes; where its
// figures go (may be null).
struct TxScope {
  Tx& tx;
  const kv::ShardMap& index;
  kv::BucketWrites index_writes;
  ClientStats* stats = nullptr;
};

// A vertex as the transaction sees it; object null when the id has none.
struct VertexInTx {
  int64_t id = 0;
  ObjBuf* object = nullptr;
  Vertex v;
};

Task<absl::StatusOr<VertexInTx>> ReadVertex(TxScope& s, int64_t id);
// Writes `vertex.v` back: into its object when it fits, else into a new one (the index
// points to it, the old one is freed); a vertex without object gets one, near its
// index entry.
Task<absl::Status> StoreVertex(TxScope& s, VertexInTx& vertex);

// Nodes. `chunks`: each node's data already written as chunk objects (data over
// kMaxInlineNodeData), else empty and the data inline (or `chunks` empty for all).
// PutNodesTx writes each node at its `id` (ids reserved by the caller: graph_client.h)
// until the transaction writes max_write_bytes (txWriteBytes) or more, and returns how
// many it wrote: at least one, a prefix of `nodes`.
Task<absl::StatusOr<size_t>> PutNodesTx(TxScope& s, absl::Span<const Node> nodes, uint64_t max_write_bytes,
                                        absl::Span<const std::vector<FatPtr>> chunks);
Task<absl::StatusOr<bool>> UpdateNodeTx(TxScope& s, const Node& node, std::vector<FatPtr> chunks);
Task<absl::StatusOr<bool>> DeleteNodeTx(TxScope& s, int64_t id, int32_t type);
Task<absl::Status> ResetNodeIdsTx(TxScope& s, int64_t start_id);

// Links. AddLinksTx: upserts of one (id1, type), in order, as many as keep the blocks
// the transaction writes at kMaxDirtyBlocksPerTx or fewer (at least one): a commit
// record must fit one message. Two links always fit (each changes at most two blocks).
// An indexed list's operations stop at kMaxIndexedDirtyBytes of changed blocks and tree
// nodes (one operation changes at most about 32 KiB).
inline constexpr size_t kMaxDirtyBlocksPerTx = 6;
inline constexpr uint64_t kMaxIndexedDirtyBytes = 16 * 1024;
struct AddLinksResult {
  uint64_t added = 0;    // links that were new
  uint32_t applied = 0;  // links of `links` applied (a prefix)
};
Task<absl::StatusOr<AddLinksResult>> AddLinksTx(TxScope& s, int64_t id1, int64_t type, absl::Span<const Link> links,
                                                uint32_t* walked = nullptr);
// A load's step: appends `links` (newest first, id2s unique, none in the list — the
// caller's promise for the whole load) after the list's last link, reading only the
// vertex, the tail and the head: O(links), whatever the list's length. The first step
// needs an empty list and marks it with `token`; a later step needs the mark still
// there (no other change of the list since) and links older than its last one. nullopt
// (nothing written) when a condition does not hold: the caller goes on with
// AddLinksTx; so does an indexed list (the upserts keep its indexes). The number of
// links added.
Task<absl::StatusOr<std::optional<uint64_t>>> LoadLinksTx(TxScope& s, int64_t id1, int64_t type, uint64_t token,
                                                          absl::Span<const Link> links);
// Several lists' loads in one transaction (a bulk load's batch, LoadLinkLists): the
// first step of a load (LoadLinksTx with `token`) of each list in order, each list's
// links newest first with unique id2s, until the transaction writes max_write_bytes
// (txWriteBytes) or more. How many lists it took (at least one, a prefix); the lists
// among them that LoadLinksTx declined, their indexes into `lists` in `declined`
// (nothing written for them: the caller upserts them, AddLinksTx); the links added.
struct LoadListsResult {
  size_t taken = 0;
  uint64_t added = 0;
  std::vector<size_t> declined;
};
Task<absl::StatusOr<LoadListsResult>> LoadListsTx(TxScope& s, absl::Span<const LinkList> lists, uint64_t token,
                                                  uint64_t max_write_bytes);
Task<absl::StatusOr<bool>> DeleteLinkTx(TxScope& s, int64_t id1, int64_t type, int64_t id2, bool expunge,
                                        uint32_t* walked = nullptr);
// Link updates of one vertex in one transaction (its updates that queued together,
// combined: GraphClient::Execute): in order, each an AddLinksTx of its one link or a
// DeleteLinkTx, until the transaction writes max_write_bytes (txWriteBytes) or more.
// How many it took (at least one: a prefix) and each one's answer (added: the link was
// new; removed: it was found); per update taken, the blocks of an unindexed list it read
// whole (`walked` above).
struct LinkUpdate {
  bool remove = false;   // DeleteLinkTx of (link.type, link.id2), else an upsert of link
  bool expunge = false;  // remove only
  Link link;             // link.id1 is the vertex's
};
struct LinkUpdatesResult {
  std::vector<bool> answers;
  std::vector<uint32_t> walked;
};
Task<absl::StatusOr<LinkUpdatesResult>> LinkUpdatesTx(TxScope& s, int64_t id1, absl::Span<const LinkUpdate> updates,
                                                      uint64_t max_write_bytes);
// The links to `id2s` that exist (hidden too), in the order of id2s, each once.
Task<absl::StatusOr<std::vector<Link>>> GetLinksTx(TxScope& s, int64_t id1, int64_t type,
                                                   absl::Span<const int64_t> id2s, uint32_t* walked = nullptr);

// One page of getLinkList, read in the transaction (block by block until it is
// complete).
Task<absl::StatusOr<std::vector<Link>>> GetLinkListTx(TxScope& s, const LinkRange& range);

// The whole list of (id1, type), hidden links too, in list order, and its count; and
// for an indexed list, whether its indexes agree with it (list_index.h, invariants 1
// and 2: a check for tests and tools).
struct ListSnapshot {
  uint64_t count = 0;
  std::vector<Link> links;
  bool indexed = false;
  absl::Status index_check;
};
Task<absl::StatusOr<ListSnapshot>> ReadListTx(TxScope& s, int64_t id1, int64_t type);

}  // namespace farm::graph

#endif  // FARM_GRAPH_GRAPH_TX_H_
