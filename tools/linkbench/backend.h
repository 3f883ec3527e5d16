// The LinkBench driver's store interface: a Backend is opened once per run (a fresh,
// empty store) and hands out one Connection per loader or requester thread. Every
// Connection method blocks until the operation is done and mirrors graph::GraphStore
// (graph/store.h): the same records (graph/types.h), the same contract (LinkBench's,
// with the MySQL store as the reference: ../shared/workloads/WORKLOADS.md), the same
// errors as absl::Status (InvalidArgument for data over the limits or a limit over
// 10000; Unavailable / DeadlineExceeded when the store did not answer; Internal for
// anything else the store reported).
//
// Threads: Backend::Connect and Describe may be called from any thread; a Connection is
// used by one thread at a time. Connections must be destroyed before their Backend.
//
// Backends are chosen by name (backend_registry.h): `memory`, `mariadb`, `farm`,
// `graph-resp`; more are
// added by a row in the registry's table.
#ifndef FARM_TOOLS_LINKBENCH_BACKEND_H_
#define FARM_TOOLS_LINKBENCH_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/types.h"

namespace farm::linkbench {

class Connection {
 public:
  virtual ~Connection() = default;

  // --- nodes ---
  // A new node with the next id (node.id is ignored): the id.
  virtual absl::StatusOr<int64_t> AddNode(graph::Node node) = 0;
  // Bulk AddNode for the load: the ids, consecutive, in order.
  virtual absl::StatusOr<std::vector<int64_t>> AddNodes(std::vector<graph::Node> nodes) = 0;
  // The node, or nullopt when there is none with this id or its type differs.
  virtual absl::StatusOr<std::optional<graph::Node>> GetNode(int64_t id, int32_t type) = 0;
  // Replaces version, time and data of node (id, type): true when it existed.
  virtual absl::StatusOr<bool> UpdateNode(graph::Node node) = 0;
  // true when a node (id, type) existed (and is now gone).
  virtual absl::StatusOr<bool> DeleteNode(int64_t id, int32_t type) = 0;
  // The next AddNode returns `start_id` (before a load; a store may drop its nodes, as
  // LinkBench's MySQL store truncates its node table).
  virtual absl::Status ResetNodeIds(int64_t start_id) = 0;

  // --- links ---
  // Upsert of (id1, type, id2): true when the link is new. The count changes by one
  // only when the link's visibility changes (or a new link is visible).
  virtual absl::StatusOr<bool> AddLink(graph::Link link) = 0;
  // Bulk load of links of one (id1, type), every link with that id1 and type, into a
  // list that has none yet: afterwards the list holds them and its count is the number
  // of visible ones. Returns the number of links stored.
  virtual absl::StatusOr<uint64_t> AddLinks(int64_t id1, int64_t type, std::vector<graph::Link> links) = 0;
  // AddLinks of several lists (LinkBench's addBulkLinks and addBulkCounts: a loader's
  // batch of about a thousand links over many id1s), each (id1, type) once, in any
  // order; not atomic as a whole. Returns the number of links stored. By default one
  // AddLinks per list.
  virtual absl::StatusOr<uint64_t> AddLinkLists(std::vector<graph::LinkList> lists) {
    uint64_t stored = 0;
    for (graph::LinkList& list : lists) {
      absl::StatusOr<uint64_t> n = AddLinks(list.id1, list.type, std::move(list.links));
      if (!n.ok()) return n.status();
      stored += *n;
    }
    return stored;
  }
  // Hides the link (or removes it when `expunge`); the count drops by one when it was
  // visible. A hidden link and not `expunge`: nothing changes. true when it was found.
  virtual absl::StatusOr<bool> DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) = 0;
  // The links of (id1, type) to the given id2s that exist, hidden ones too, in any
  // order, each once.
  virtual absl::StatusOr<std::vector<graph::Link>> GetLinks(int64_t id1, int64_t type,
                                                            absl::Span<const int64_t> id2s) = 0;
  // Visible links with min_time <= time <= max_time, newest first (ties: larger id2
  // first), skipping `offset`, at most `limit` (<= 10000).
  virtual absl::StatusOr<std::vector<graph::Link>> GetLinkList(const graph::LinkRange& range) = 0;
  // The number of visible links of (id1, type); 0 when none.
  virtual absl::StatusOr<uint64_t> CountLinks(int64_t id1, int64_t type) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // One line for reports: the name and what it runs on (e.g. "mariadb 10.11.6, own
  // server, InnoDB, flush at commit, buffer pool 1G").
  virtual std::string Describe() const = 0;
  // A new connection for one thread.
  virtual absl::StatusOr<std::unique_ptr<Connection>> Connect() = 0;
  // The measured requests start now (after the warm-up, if any): Summary's counters
  // count from here. Called once per request phase, from a requester thread while the
  // others wait, so with no connection in use.
  virtual void StartMeasuring() {}
  // Backend-specific figures for the report, one line each, of the measured requests
  // (e.g. the farm backend's fabric READs per lock-free operation); empty by default.
  // Called after the request phase, with no connection in use.
  virtual std::vector<std::string> Summary() { return {}; }
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_BACKEND_H_
