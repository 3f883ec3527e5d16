#include "tools/linkbench/id_space.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/random/random.h"

namespace farm::linkbench {
namespace {

class IdSpaceConnection final : public Connection {
 public:
  IdSpaceConnection(std::unique_ptr<Connection> c, int64_t base) : c_(std::move(c)), base_(base) {}

  absl::StatusOr<int64_t> AddNode(graph::Node node) override {
    absl::StatusOr<int64_t> id = c_->AddNode(std::move(node));
    if (!id.ok()) return id;
    return *id - base_;
  }
  absl::StatusOr<std::vector<int64_t>> AddNodes(std::vector<graph::Node> nodes) override {
    absl::StatusOr<std::vector<int64_t>> ids = c_->AddNodes(std::move(nodes));
    if (!ids.ok()) return ids;
    for (int64_t& id : *ids) id -= base_;
    return ids;
  }
  absl::StatusOr<std::optional<graph::Node>> GetNode(int64_t id, int32_t type) override {
    absl::StatusOr<std::optional<graph::Node>> n = c_->GetNode(id + base_, type);
    if (n.ok() && n->has_value()) (*n)->id -= base_;
    return n;
  }
  absl::StatusOr<bool> UpdateNode(graph::Node node) override {
    node.id += base_;
    return c_->UpdateNode(std::move(node));
  }
  absl::StatusOr<bool> DeleteNode(int64_t id, int32_t type) override { return c_->DeleteNode(id + base_, type); }
  absl::Status ResetNodeIds(int64_t start_id) override { return c_->ResetNodeIds(start_id + base_); }
  absl::StatusOr<bool> AddLink(graph::Link link) override { return c_->AddLink(In(std::move(link))); }
  absl::StatusOr<uint64_t> AddLinks(int64_t id1, int64_t type, std::vector<graph::Link> links) override {
    for (graph::Link& l : links) l = In(std::move(l));
    return c_->AddLinks(id1 + base_, type, std::move(links));
  }
  absl::StatusOr<uint64_t> AddLinkLists(std::vector<graph::LinkList> lists) override {
    for (graph::LinkList& list : lists) {
      list.id1 += base_;
      for (graph::Link& l : list.links) l = In(std::move(l));
    }
    return c_->AddLinkLists(std::move(lists));
  }
  absl::StatusOr<bool> DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) override {
    return c_->DeleteLink(id1 + base_, type, id2 + base_, expunge);
  }
  absl::StatusOr<std::vector<graph::Link>> GetLinks(int64_t id1, int64_t type,
                                                    absl::Span<const int64_t> id2s) override {
    std::vector<int64_t> moved(id2s.begin(), id2s.end());
    for (int64_t& id2 : moved) id2 += base_;
    return Out(c_->GetLinks(id1 + base_, type, moved));
  }
  absl::StatusOr<std::vector<graph::Link>> GetLinkList(const graph::LinkRange& range) override {
    graph::LinkRange r = range;
    r.id1 += base_;
    return Out(c_->GetLinkList(r));
  }
  absl::StatusOr<uint64_t> CountLinks(int64_t id1, int64_t type) override { return c_->CountLinks(id1 + base_, type); }

 private:
  graph::Link In(graph::Link l) const {
    l.id1 += base_;
    l.id2 += base_;
    return l;
  }
  absl::StatusOr<std::vector<graph::Link>> Out(absl::StatusOr<std::vector<graph::Link>> links) const {
    if (links.ok()) {
      for (graph::Link& l : *links) {
        l.id1 -= base_;
        l.id2 -= base_;
      }
    }
    return links;
  }

  std::unique_ptr<Connection> c_;
  const int64_t base_;
};

class IdSpaceBackend final : public Backend {
 public:
  IdSpaceBackend(std::unique_ptr<Backend> b, int64_t base) : b_(std::move(b)), base_(base) {}
  std::string Describe() const override {
    return absl::StrCat(b_->Describe(), "; ids moved by ", base_, " (a fresh id space in the cluster's graph)");
  }
  absl::StatusOr<std::unique_ptr<Connection>> Connect() override {
    absl::StatusOr<std::unique_ptr<Connection>> c = b_->Connect();
    if (!c.ok()) return c.status();
    return std::unique_ptr<Connection>(new IdSpaceConnection(std::move(*c), base_));
  }
  void StartMeasuring() override { b_->StartMeasuring(); }
  std::vector<std::string> Summary() override { return b_->Summary(); }

 private:
  std::unique_ptr<Backend> b_;
  const int64_t base_;
};

}  // namespace

int64_t FreshIdBase() {
  // One of 2^22 - 1 spaces of 2^40 ids (all below 2^62), drawn from the OS's entropy:
  // two opens meet with probability 2^-22.
  absl::BitGen bits;
  return absl::Uniform<int64_t>(bits, 1, int64_t{1} << 22) << kIdSpaceBits;
}

std::unique_ptr<Backend> InIdSpace(std::unique_ptr<Backend> backend, int64_t base) {
  return std::unique_ptr<Backend>(new IdSpaceBackend(std::move(backend), base));
}

}  // namespace farm::linkbench
