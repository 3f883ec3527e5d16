// GraphClient: the graph (Tao on FaRM) on one worker thread, as a GraphStore: lock-free
// reads through GraphReader; link updates and assoc_get (GetLinks) shipped to the
// machine of id1's vertex (messages.h) and run there as transactions (graph_tx.h);
// node updates and deletes as transactions from this thread; AddNode(s) take their ids
// from the block of reserved ids on the machine of the id counter (kTakeNodeIds,
// node_ids.h; an AddNode that fails after it leaves a gap in the ids, as an
// auto-increment does), then ship the nodes to their vertices' machines, grouped
// (bulk_load.h), as LoadLinkLists ships a load's lists; ResetNodeIds runs there too. Transactions
// are retried with backoff on conflicts. AddLinks sends its links newest first in transactions of at most
// kMaxShippedEdgeBytes of edges that change at most kMaxDirtyBlocksPerTx blocks: a call
// that fits one is atomic (two links always do), a larger one (a load) is applied in
// several; a load into an empty list appends (graph_tx.h, LoadLinksTx) and, when the list
// came out long, has it indexed before it returns (kIndexList). GetLinks reads
// up to kMaxGetLinksPerRead id2s atomically. Node data over kMaxInlineNodeData is
// written first as chunk objects, a transaction each, then linked in by the node's
// transaction (chunks of a transaction that fails are freed again).
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_GRAPH_GRAPH_CLIENT_H_
#define FARM_GRAPH_GRAPH_CLIENT_H_

#include <coroutine>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/graph_reader.h"
#include "graph/graph_tx.h"
#include "graph/list_index.h"
#include "graph/messages.h"
#include "graph/node_ids.h"
#include "graph/run_tx.h"
#include "graph/store.h"
#include "kv/shard_map.h"
#include "kv/table_client.h"
#include "kv/table_reader.h"

namespace farm::graph {

struct IndexBuild;  // graph_client.cc

class GraphClient final : public GraphStore {
 public:
  // How long a conflicting transaction is retried (run_tx.h).
  static constexpr absl::Duration kRetryBudget = kTxRetryBudget;
  // Lock-free tries of a page before it is read where the list lives.
  static constexpr uint32_t kLockFreePageAttempts = 4;
  // GetLinks reads this many id2s together (atomically); more in several reads.
  // (LinkBench's multiget asks for at most 127.)
  static constexpr size_t kMaxGetLinksPerRead = 128;
  // A load of more links than this into one list ends by asking the list's machine to
  // index it (kIndexList), which it does when the list has more than
  // ListIndexTuning::min_blocks blocks.
  static constexpr size_t kIndexAfterLoadLinks = 256;

  // `index`: this thread's client of the id index (a kv table); `ids`: this machine's
  // block of node ids (shared by its threads' clients, used when the id counter is here).
  GraphClient(Context& ctx, kv::TableClient& index, NodeIdBlock& ids, ListIndexTuning tuning = {})
      : ctx_(ctx),
        index_client_(index),
        index_(index.shared_map()),
        reader_(ctx, index.reader()),
        ids_(ids),
        tuning_(tuning) {}

  void AddNode(Node node, Done<absl::StatusOr<int64_t>> done) override;
  void AddNodes(std::vector<Node> nodes, Done<absl::StatusOr<int64_t>> done) override;
  void GetNode(int64_t id, int32_t type, Done<absl::StatusOr<std::optional<Node>>> done) override;
  void UpdateNode(Node node, Done<absl::StatusOr<bool>> done) override;
  void DeleteNode(int64_t id, int32_t type, Done<absl::StatusOr<bool>> done) override;
  void ResetNodeIds(int64_t start_id, Done<absl::Status> done) override;
  void AddLink(Link link, Done<absl::StatusOr<bool>> done) override;
  void AddLinks(int64_t id1, int64_t type, std::vector<Link> links, Done<absl::StatusOr<uint64_t>> done) override;
  void LoadLinks(int64_t id1, int64_t type, std::vector<Link> links, uint64_t load,
                 Done<absl::StatusOr<uint64_t>> done) override;
  void LoadLinkLists(std::vector<LinkList> lists, uint64_t load, Done<absl::StatusOr<uint64_t>> done) override;
  void DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge, Done<absl::StatusOr<bool>> done) override;
  void GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s,
                Done<absl::StatusOr<std::vector<Link>>> done) override;
  void GetLinkList(LinkRange range, Done<absl::StatusOr<std::vector<Link>>> done) override;
  void CountLinks(int64_t id1, int64_t type, Done<absl::StatusOr<uint64_t>> done) override;

  // The whole list of (id1, type) and its count, read in one (read-only) transaction:
  // for checks and tools; O(list).
  void ReadList(int64_t id1, int64_t type, Done<absl::StatusOr<ListSnapshot>> done);

  // Sends `request` to the machine of its id1's vertex (kTakeNodeIds, kResetNodeIds: of
  // the id counter), where Execute runs it.
  void Ship(ShipRequest request, Done<absl::StatusOr<ShipReply>> done);
  // Runs a shipped operation here (the handler of kGraphShipMsgId). Link updates of one
  // vertex (kAddLinks, kDeleteLink: they all write its lists' heads and counts) run one
  // at a time on this thread, in arrival order: one that arrives while another of its
  // id1 runs waits for it instead of conflicting with it (a hot vertex's writers retried
  // with backoff for seconds; LinkBench with 100 requesters), and the updates that
  // waited together commit together (CombinedWrite: deletes and single-link upserts of
  // any of its lists), each answered as if alone. Other operations start at once.
  void Execute(ShipRequest request, Done<absl::StatusOr<ShipReply>> done);

  const ReaderStats& reader_stats() const { return reader_.stats(); }
  const ClientStats& stats() const { return stats_; }
  // The id index's shard map (for transactions run by tests and tools: graph_tx.h).
  const std::shared_ptr<const kv::ShardMap>& index_map() const { return index_; }
  // This thread's client of the id index (tests and tools).
  kv::TableClient& index_client() const { return index_client_; }
  Context& ctx() const { return ctx_; }
  // Tests only: commits the transactions of combined link updates (CombinedWrite) in
  // place of TxCommit. Set on the client's thread, while none runs.
  void set_combined_commit_for_test(CommitForTest commit) { combined_commit_for_test_ = std::move(commit); }

 private:
  static Task<absl::StatusOr<std::vector<Link>>> GetLinksTask(GraphClient* self, int64_t id1, int64_t type,
                                                              std::vector<int64_t> id2s);
  static Task<absl::StatusOr<std::vector<Link>>> GetLinkListTask(GraphClient* self, LinkRange range);
  static Task<absl::StatusOr<ShipReply>> ExecuteAndIndex(GraphClient* self, ShipRequest r);
  struct QueuedWrite {
    ShipRequest request;
    Done<absl::StatusOr<ShipReply>> done;
  };
  // Link updates of one vertex queued together go in one transaction (LinkUpdatesTx),
  // up to this many and this many bytes written.
  static constexpr size_t kMaxCombinedUpdates = 32;
  static constexpr uint64_t kMaxCombinedWriteBytes = 16 * 1024;
  // Runs a link update of `request.id1` (which has its entry in writing_), with the
  // updates queued right behind it that combine with it when `combine`; then the next
  // queued one.
  void RunVertexWrite(ShipRequest request, Done<absl::StatusOr<ShipReply>> done, bool combine);
  void NextVertexWrite(int64_t id1, bool combine);
  // One transaction for `batch` (deletes and single-link upserts of one vertex, in
  // order): answers those it took and puts the rest back at the front of the queue;
  // false when it took none (it failed, and nothing of it was written). A commit that
  // may have happened (MayHaveCommitted) answers each update it carried with its error.
  static Task<absl::StatusOr<bool>> CombinedWrite(GraphClient* self, std::vector<QueuedWrite> batch);
  // Builds the indexes of (id1, type) when it has more than `min_blocks` blocks; when a
  // build of that list already runs on this thread, waits for it and answers its result.
  static Task<absl::StatusOr<bool>> BuildIndexOnce(GraphClient* self, int64_t id1, int64_t type,
                                                   uint32_t min_blocks);
  // `load`: LoadLinks' token (0: AddLinks, which makes one for a call that is a load).
  static Task<absl::StatusOr<uint64_t>> AddLinksTask(GraphClient* self, int64_t id1, int64_t type,
                                                     std::vector<Link> links, uint64_t load);

  Context& ctx_;
  kv::TableClient& index_client_;
  const std::shared_ptr<const kv::ShardMap> index_;
  GraphReader reader_;
  NodeIdBlock& ids_;
  ClientStats stats_;
  const ListIndexTuning tuning_;
  CommitForTest combined_commit_for_test_;
  // Lists whose indexes this thread builds, each with the operations waiting for it.
  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::shared_ptr<IndexBuild>> building_;
  // id1 -> the link updates waiting behind the one of that vertex running here (an
  // entry exists exactly while one runs or is deferred to run next).
  absl::flat_hash_map<int64_t, std::deque<QueuedWrite>> writing_;
};

// co_await ShipAwait(client, request) -> StatusOr<ShipReply>: GraphClient::Ship.
class ShipAwait {
 public:
  ShipAwait(GraphClient& client, ShipRequest request) : client_(client), request_(std::move(request)) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    client_.Ship(std::move(request_), [this, h](absl::StatusOr<ShipReply> r) {
      result_ = std::move(r);
      h.resume();
    });
  }
  absl::StatusOr<ShipReply> await_resume() { return std::move(result_); }

 private:
  GraphClient& client_;
  ShipRequest request_;
  absl::StatusOr<ShipReply> result_ = absl::UnknownError("not completed");
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_GRAPH_CLIENT_H_
