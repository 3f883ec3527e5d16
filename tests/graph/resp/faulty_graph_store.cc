#include "tests/graph/resp/faulty_graph_store.h"

#include <iterator>
#include <utility>

namespace farm::graph::testing {

std::optional<absl::Status> FaultyGraphStore::NextFailure() {
  ++operations_;
  if (!failures_.empty()) {
    absl::Status s = std::move(failures_.front());
    failures_.pop_front();
    return s;
  }
  if (fail_one_in_ == 0) return std::nullopt;
  rng_state_ ^= rng_state_ << 13;  // xorshift64
  rng_state_ ^= rng_state_ >> 7;
  rng_state_ ^= rng_state_ << 17;
  if (rng_state_ % fail_one_in_ != 0) return std::nullopt;
  static const absl::StatusCode kCodes[] = {
      absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
      absl::StatusCode::kResourceExhausted, absl::StatusCode::kAborted, absl::StatusCode::kInternal};
  return absl::Status(kCodes[(rng_state_ >> 8) % std::size(kCodes)],
                      "injected at r1+0x40\r\nsecond line");
}

template <typename T>
bool FaultyGraphStore::Failed(Done<T>& done) {
  std::optional<absl::Status> error = NextFailure();
  if (!error) return false;
  ctx_.Defer([done = std::move(done), error = std::move(*error)]() mutable { done(T(error)); });
  return true;
}

void FaultyGraphStore::AddNode(Node node, Done<absl::StatusOr<int64_t>> done) {
  if (!Failed(done)) inner_.AddNode(std::move(node), std::move(done));
}
void FaultyGraphStore::AddNodes(std::vector<Node> nodes, Done<absl::StatusOr<int64_t>> done) {
  if (!Failed(done)) inner_.AddNodes(std::move(nodes), std::move(done));
}
void FaultyGraphStore::GetNode(int64_t id, int32_t type, Done<absl::StatusOr<std::optional<Node>>> done) {
  if (!Failed(done)) inner_.GetNode(id, type, std::move(done));
}
void FaultyGraphStore::UpdateNode(Node node, Done<absl::StatusOr<bool>> done) {
  if (!Failed(done)) inner_.UpdateNode(std::move(node), std::move(done));
}
void FaultyGraphStore::DeleteNode(int64_t id, int32_t type, Done<absl::StatusOr<bool>> done) {
  if (!Failed(done)) inner_.DeleteNode(id, type, std::move(done));
}
void FaultyGraphStore::ResetNodeIds(int64_t start_id, Done<absl::Status> done) {
  if (!Failed(done)) inner_.ResetNodeIds(start_id, std::move(done));
}
void FaultyGraphStore::AddLink(Link link, Done<absl::StatusOr<bool>> done) {
  if (!Failed(done)) inner_.AddLink(std::move(link), std::move(done));
}
void FaultyGraphStore::AddLinks(int64_t id1, int64_t type, std::vector<Link> links,
                                Done<absl::StatusOr<uint64_t>> done) {
  if (!Failed(done)) inner_.AddLinks(id1, type, std::move(links), std::move(done));
}
void FaultyGraphStore::DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge,
                                  Done<absl::StatusOr<bool>> done) {
  if (!Failed(done)) inner_.DeleteLink(id1, type, id2, expunge, std::move(done));
}
void FaultyGraphStore::GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s,
                                Done<absl::StatusOr<std::vector<Link>>> done) {
  if (!Failed(done)) inner_.GetLinks(id1, type, id2s, std::move(done));
}
void FaultyGraphStore::GetLinkList(LinkRange range, Done<absl::StatusOr<std::vector<Link>>> done) {
  if (!Failed(done)) inner_.GetLinkList(range, std::move(done));
}
void FaultyGraphStore::CountLinks(int64_t id1, int64_t type, Done<absl::StatusOr<uint64_t>> done) {
  if (!Failed(done)) inner_.CountLinks(id1, type, std::move(done));
}

}  // namespace farm::graph::testing
