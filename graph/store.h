// GraphStore: every LinkBench operation (../shared/workloads/WORKLOADS.md) on one
// worker thread; what the graph service (graph/resp) and the drivers need from a graph.
//
// Implemented by graph::GraphClient (Tao on FaRM, graph/graph_client.h) and by
// graph::MemoryGraph (a reference model, graph/memory_graph.h, for tests).
//
// Contract:
//   - Every call is made on the worker thread that owns the store; its continuation
//     runs later on that thread, never inside the call.
//   - Every operation is strictly serializable; a link and its list's count change
//     together.
//   - Errors: InvalidArgument — data over kMaxNodeDataBytes / kMaxLinkDataBytes, a
//     visibility other than 0 or 1, a limit over kDefaultRangeLimit; Unavailable /
//     DeadlineExceeded — a machine did not answer (the operation may or may not have
//     happened when it wrote); ResourceExhausted — the cluster's memory is full.
//     Aborted only when an operation kept conflicting for GraphClient::kRetryBudget
//     (4 s of retries with randomised backoff).
#ifndef FARM_GRAPH_STORE_H_
#define FARM_GRAPH_STORE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/types.h"

namespace farm::graph {

template <typename T>
using Done = absl::AnyInvocable<void(T)>;

class GraphStore {
 public:
  virtual ~GraphStore() = default;

  // --- nodes ---
  // A new node with the next id (node.id is ignored): the id.
  virtual void AddNode(Node node, Done<absl::StatusOr<int64_t>> done) = 0;
  // Several nodes with consecutive ids (a load): the first id.
  virtual void AddNodes(std::vector<Node> nodes, Done<absl::StatusOr<int64_t>> done) = 0;
  // The node, or nullopt when there is none with this id or its type differs.
  virtual void GetNode(int64_t id, int32_t type, Done<absl::StatusOr<std::optional<Node>>> done) = 0;
  // Replaces version, time and data of the node (id, type): true when it existed.
  virtual void UpdateNode(Node node, Done<absl::StatusOr<bool>> done) = 0;
  // true when a node (id, type) existed (and is now gone).
  virtual void DeleteNode(int64_t id, int32_t type, Done<absl::StatusOr<bool>> done) = 0;
  // The next AddNode returns `start_id` (for a load); ids keep increasing from there.
  virtual void ResetNodeIds(int64_t start_id, Done<absl::Status> done) = 0;

  // --- links ---
  // Upsert of (id1, type, id2): true when the link is new. The count changes by one
  // only when the link's visibility changes (or a new link is visible).
  virtual void AddLink(Link link, Done<absl::StatusOr<bool>> done) = 0;
  // Several links of one (id1, type) in one operation (a load): each as AddLink, in
  // order. The number of new links.
  virtual void AddLinks(int64_t id1, int64_t type, std::vector<Link> links,
                        Done<absl::StatusOr<uint64_t>> done) = 0;
  // AddLinks for a bulk load: successive calls with one `load` token (nonzero, unique
  // to the loader) into a list that was empty when the first began append at its tail
  // at a cost linear in the links, not in the list — as long as nothing else changes
  // the list and the links come oldest last; otherwise (and by default) as AddLinks.
  // The load's promise, as LinkBench's addBulkLinks: each id2 once per load. Within one
  // call a repeated id2 is an upsert; across calls of one load an id2 sent again with
  // an older time is not detected (the list then holds it twice). A call with no links
  // ends the load of the list (0): a store that indexes long lists indexes it now, not
  // on the first request that walks it.
  virtual void LoadLinks(int64_t id1, int64_t type, std::vector<Link> links, uint64_t load,
                         Done<absl::StatusOr<uint64_t>> done) {
    AddLinks(id1, type, std::move(links), std::move(done));
  }
  // LoadLinks of several lists with one `load` token (LinkBench's addBulkLinks: a
  // loader's batch of about a thousand links over many id1s): each list as LoadLinks,
  // the lists in any order, each (id1, type) at most once. A store may apply several
  // lists in one transaction; a call is not atomic as a whole. The number of new links.
  // By default one LoadLinks after the other.
  virtual void LoadLinkLists(std::vector<LinkList> lists, uint64_t load, Done<absl::StatusOr<uint64_t>> done);
  // Hides the link (or removes it when `expunge`); the count drops by one when it was
  // visible. A hidden link and not `expunge`: nothing changes. true when it was found.
  virtual void DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge,
                          Done<absl::StatusOr<bool>> done) = 0;
  // The links of (id1, type) to the given id2s that exist, hidden ones too, in the
  // order of `id2s` (an id2 named twice is returned once).
  virtual void GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s,
                        Done<absl::StatusOr<std::vector<Link>>> done) = 0;
  virtual void GetLinkList(LinkRange range, Done<absl::StatusOr<std::vector<Link>>> done) = 0;
  // The number of visible links of (id1, type).
  virtual void CountLinks(int64_t id1, int64_t type, Done<absl::StatusOr<uint64_t>> done) = 0;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_STORE_H_
