#include "tools/linkbench/memory_backend.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "graph/memory_graph.h"

namespace farm::linkbench {
namespace {

struct SharedGraph {
  absl::Mutex mu;
  graph::MemoryGraph graph ABSL_GUARDED_BY(mu);
};

class MemoryConnection final : public Connection {
 public:
  explicit MemoryConnection(SharedGraph& shared) : s_(shared) {}

  absl::StatusOr<int64_t> AddNode(graph::Node node) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.AddNode(std::move(node));
  }
  absl::StatusOr<std::vector<int64_t>> AddNodes(std::vector<graph::Node> nodes) override {
    for (const graph::Node& n : nodes) {
      if (absl::Status st = graph::CheckNode(n); !st.ok()) return st;
    }
    std::vector<int64_t> ids;
    ids.reserve(nodes.size());
    absl::MutexLock lock(&s_.mu);  // one lock: the ids are consecutive
    for (graph::Node& n : nodes) {
      absl::StatusOr<int64_t> id = s_.graph.AddNode(std::move(n));
      if (!id.ok()) return id.status();
      ids.push_back(*id);
    }
    return ids;
  }
  absl::StatusOr<std::optional<graph::Node>> GetNode(int64_t id, int32_t type) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.GetNode(id, type);
  }
  absl::StatusOr<bool> UpdateNode(graph::Node node) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.UpdateNode(node);
  }
  absl::StatusOr<bool> DeleteNode(int64_t id, int32_t type) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.DeleteNode(id, type);
  }
  absl::Status ResetNodeIds(int64_t start_id) override {
    absl::MutexLock lock(&s_.mu);
    s_.graph.ResetNodeIds(start_id);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> AddLink(graph::Link link) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.AddLink(link);
  }
  absl::StatusOr<uint64_t> AddLinks(int64_t id1, int64_t type, std::vector<graph::Link> links) override {
    for (const graph::Link& l : links) {
      if (l.id1 != id1 || l.type != type) return absl::InvalidArgumentError("AddLinks: a link of another (id1, type)");
      if (absl::Status st = graph::CheckLink(l); !st.ok()) return st;
    }
    absl::MutexLock lock(&s_.mu);
    for (const graph::Link& l : links) {
      if (absl::StatusOr<bool> added = s_.graph.AddLink(l); !added.ok()) return added.status();
    }
    return links.size();
  }
  absl::StatusOr<bool> DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.DeleteLink(id1, type, id2, expunge);
  }
  absl::StatusOr<std::vector<graph::Link>> GetLinks(int64_t id1, int64_t type,
                                                    absl::Span<const int64_t> id2s) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.GetLinks(id1, type, id2s);
  }
  absl::StatusOr<std::vector<graph::Link>> GetLinkList(const graph::LinkRange& range) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.GetLinkList(range);
  }
  absl::StatusOr<uint64_t> CountLinks(int64_t id1, int64_t type) override {
    absl::MutexLock lock(&s_.mu);
    return s_.graph.CountLinks(id1, type);
  }

 private:
  SharedGraph& s_;
};

class MemoryBackend final : public Backend {
 public:
  std::string Describe() const override { return "memory (graph::MemoryGraph, one mutex)"; }
  absl::StatusOr<std::unique_ptr<Connection>> Connect() override {
    return std::make_unique<MemoryConnection>(shared_);
  }

 private:
  SharedGraph shared_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> OpenMemoryBackend(const BackendOptions&) {
  return std::make_unique<MemoryBackend>();
}

}  // namespace farm::linkbench
