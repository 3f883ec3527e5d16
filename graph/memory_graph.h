// MemoryGraph: LinkBench's contract (graph/types.h, graph/store.h) on plain maps, in one
// process: the reference model the graph store is checked against, the fake behind the
// RESP service's unit tests and the LinkBench driver's `memory` backend.
//
// Synchronous and not thread-safe: callers serialise access (one operation at a time is
// trivially strictly serializable). MemoryGraphStore wraps it as a GraphStore on one
// thread's Context.
#ifndef FARM_GRAPH_MEMORY_GRAPH_H_
#define FARM_GRAPH_MEMORY_GRAPH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "farm/api/farm.h"
#include "graph/store.h"
#include "graph/types.h"

namespace farm::graph {

// Checks a node or link against the limits (InvalidArgument naming the limit).
absl::Status CheckNode(const Node& node);
absl::Status CheckLink(const Link& link);
absl::Status CheckRange(const LinkRange& range);

class MemoryGraph {
 public:
  absl::StatusOr<int64_t> AddNode(Node node);
  std::optional<Node> GetNode(int64_t id, int32_t type) const;
  absl::StatusOr<bool> UpdateNode(const Node& node);
  bool DeleteNode(int64_t id, int32_t type);
  void ResetNodeIds(int64_t start_id) {
    next_id_ = start_id;
    ids_used_up_ = false;
  }

  absl::StatusOr<bool> AddLink(const Link& link);
  bool DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge);
  std::vector<Link> GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s) const;
  absl::StatusOr<std::vector<Link>> GetLinkList(const LinkRange& range) const;
  uint64_t CountLinks(int64_t id1, int64_t type) const;

  uint64_t links() const { return links_.size(); }

 private:
  using LinkKey = std::tuple<int64_t, int64_t, int64_t>;  // id1, type, id2
  int64_t next_id_ = 1;
  bool ids_used_up_ = false;  // INT64_MAX was handed out
  std::map<int64_t, Node> nodes_;
  std::map<LinkKey, Link> links_;
  std::map<std::pair<int64_t, int64_t>, uint64_t> counts_;
};

// A MemoryGraph as a GraphStore of one thread: each operation runs at once and its
// continuation is deferred on `ctx` (never inside the call). The graph must outlive it
// and be used by nothing else meanwhile.
class MemoryGraphStore final : public GraphStore {
 public:
  MemoryGraphStore(Context& ctx, MemoryGraph& graph) : ctx_(ctx), graph_(graph) {}

  void AddNode(Node node, Done<absl::StatusOr<int64_t>> done) override;
  void AddNodes(std::vector<Node> nodes, Done<absl::StatusOr<int64_t>> done) override;
  void GetNode(int64_t id, int32_t type, Done<absl::StatusOr<std::optional<Node>>> done) override;
  void UpdateNode(Node node, Done<absl::StatusOr<bool>> done) override;
  void DeleteNode(int64_t id, int32_t type, Done<absl::StatusOr<bool>> done) override;
  void ResetNodeIds(int64_t start_id, Done<absl::Status> done) override;
  void AddLink(Link link, Done<absl::StatusOr<bool>> done) override;
  void AddLinks(int64_t id1, int64_t type, std::vector<Link> links,
                Done<absl::StatusOr<uint64_t>> done) override;
  void DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge,
                  Done<absl::StatusOr<bool>> done) override;
  void GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s,
                Done<absl::StatusOr<std::vector<Link>>> done) override;
  void GetLinkList(LinkRange range, Done<absl::StatusOr<std::vector<Link>>> done) override;
  void CountLinks(int64_t id1, int64_t type, Done<absl::StatusOr<uint64_t>> done) override;

 private:
  template <typename T>
  void Finish(Done<T> done, T result);

  Context& ctx_;
  MemoryGraph& graph_;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_MEMORY_GRAPH_H_
