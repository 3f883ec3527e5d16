// FaultyGraphStore: a GraphStore that forwards to another one, except that the
// operations told to fail reply the given error instead (deferred on the context, as a
// store's continuation must be) without touching the graph.
//
// Threads: the context's, like the store it wraps (which must outlive it).
#ifndef FARM_TESTS_GRAPH_RESP_FAULTY_GRAPH_STORE_H_
#define FARM_TESTS_GRAPH_RESP_FAULTY_GRAPH_STORE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "farm/event/context.h"
#include "graph/store.h"

namespace farm::graph::testing {

class FaultyGraphStore final : public GraphStore {
 public:
  FaultyGraphStore(Context& ctx, GraphStore& inner) : ctx_(ctx), inner_(inner) {}

  // The next operation replies `error` (queued: one per call).
  void FailNext(absl::Status error) { failures_.push_back(std::move(error)); }
  // Every operation fails with probability 1/n (0: never), using the test's random bits.
  void FailOneIn(uint64_t n, uint64_t seed) {
    fail_one_in_ = n;
    rng_state_ = seed | 1;
  }
  uint64_t operations() const { return operations_; }

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
  // The error this operation replies, if it is to fail.
  std::optional<absl::Status> NextFailure();
  // Replies `error` later, when the operation is to fail; true then.
  template <typename T>
  bool Failed(Done<T>& done);

  Context& ctx_;
  GraphStore& inner_;
  std::deque<absl::Status> failures_;
  uint64_t fail_one_in_ = 0;
  uint64_t rng_state_ = 1;
  uint64_t operations_ = 0;
};

}  // namespace farm::graph::testing

#endif  // FARM_TESTS_GRAPH_RESP_FAULTY_GRAPH_STORE_H_
