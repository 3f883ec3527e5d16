#include "graph/memory_graph.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace farm::graph {

absl::Status CheckNode(const Node& node) {
  if (node.data.size() > kMaxNodeDataBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("node data of ", node.data.size(), " bytes is over the limit of ", kMaxNodeDataBytes));
  }
  return absl::OkStatus();
}

absl::Status CheckLink(const Link& link) {
  if (link.data.size() > kMaxLinkDataBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("link data of ", link.data.size(), " bytes is over the limit of ", kMaxLinkDataBytes));
  }
  if (link.visibility != Visibility::kHidden && link.visibility != Visibility::kVisible) {
    return absl::InvalidArgumentError("link visibility must be 0 (hidden) or 1 (visible)");
  }
  return absl::OkStatus();
}

absl::Status CheckRange(const LinkRange& range) {
  if (range.limit > kDefaultRangeLimit) {
    return absl::InvalidArgumentError(absl::StrCat("limit ", range.limit, " is over ", kDefaultRangeLimit));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> MemoryGraph::AddNode(Node node) {
  if (absl::Status s = CheckNode(node); !s.ok()) return s;
  if (ids_used_up_) return absl::ResourceExhaustedError("node ids are used up (reset them lower)");
  node.id = next_id_;
  if (next_id_ == INT64_MAX) {
    ids_used_up_ = true;
  } else {
    ++next_id_;
  }
  const int64_t id = node.id;
  nodes_[id] = std::move(node);
  return id;
}

std::optional<Node> MemoryGraph::GetNode(int64_t id, int32_t type) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end() || it->second.type != type) return std::nullopt;
  return it->second;
}

absl::StatusOr<bool> MemoryGraph::UpdateNode(const Node& node) {
  if (absl::Status s = CheckNode(node); !s.ok()) return s;
  auto it = nodes_.find(node.id);
  if (it == nodes_.end() || it->second.type != node.type) return false;
  it->second = node;
  return true;
}

bool MemoryGraph::DeleteNode(int64_t id, int32_t type) {
  auto it = nodes_.find(id);
  if (it == nodes_.end() || it->second.type != type) return false;
  nodes_.erase(it);
  return true;
}

absl::StatusOr<bool> MemoryGraph::AddLink(const Link& link) {
  if (absl::Status s = CheckLink(link); !s.ok()) return s;
  const bool visible = link.visibility == Visibility::kVisible;
  uint64_t& count = counts_[{link.id1, link.type}];
  auto [it, inserted] = links_.try_emplace({link.id1, link.type, link.id2}, link);
  if (inserted) {
    if (visible) ++count;
    return true;
  }
  const bool was_visible = it->second.visibility == Visibility::kVisible;
  if (visible && !was_visible) ++count;
  if (!visible && was_visible) --count;
  it->second = link;
  return false;
}

bool MemoryGraph::DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) {
  auto it = links_.find({id1, type, id2});
  if (it == links_.end()) return false;
  const bool was_visible = it->second.visibility == Visibility::kVisible;
  if (was_visible) --counts_[{id1, type}];
  if (expunge) {
    links_.erase(it);
  } else {
    it->second.visibility = Visibility::kHidden;
  }
  return true;
}

std::vector<Link> MemoryGraph::GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s) const {
  std::vector<Link> found;
  for (size_t i = 0; i < id2s.size(); ++i) {
    if (std::find(id2s.begin(), id2s.begin() + i, id2s[i]) != id2s.begin() + i) continue;
    auto it = links_.find({id1, type, id2s[i]});
    if (it != links_.end()) found.push_back(it->second);
  }
  return found;
}

absl::StatusOr<std::vector<Link>> MemoryGraph::GetLinkList(const LinkRange& range) const {
  if (absl::Status s = CheckRange(range); !s.ok()) return s;
  std::vector<const Link*> visible;
  for (auto it = links_.lower_bound({range.id1, range.type, INT64_MIN});
       it != links_.end() && std::get<0>(it->first) == range.id1 && std::get<1>(it->first) == range.type; ++it) {
    const Link& l = it->second;
    if (l.visibility == Visibility::kVisible && l.time >= range.min_time && l.time <= range.max_time) {
      visible.push_back(&l);
    }
  }
  std::sort(visible.begin(), visible.end(), [](const Link* a, const Link* b) {
    return a->time != b->time ? a->time > b->time : a->id2 > b->id2;
  });
  std::vector<Link> page;
  for (size_t i = range.offset; i < visible.size() && page.size() < range.limit; ++i) page.push_back(*visible[i]);
  return page;
}

uint64_t MemoryGraph::CountLinks(int64_t id1, int64_t type) const {
  auto it = counts_.find({id1, type});
  return it == counts_.end() ? 0 : it->second;
}

template <typename T>
void MemoryGraphStore::Finish(Done<T> done, T result) {
  ctx_.Defer([done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
}

void MemoryGraphStore::AddNode(Node node, Done<absl::StatusOr<int64_t>> done) {
  Finish(std::move(done), graph_.AddNode(std::move(node)));
}
void MemoryGraphStore::AddNodes(std::vector<Node> nodes, Done<absl::StatusOr<int64_t>> done) {
  for (const Node& n : nodes) {
    if (absl::Status s = CheckNode(n); !s.ok()) return Finish(std::move(done), absl::StatusOr<int64_t>(s));
  }
  int64_t first = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    absl::StatusOr<int64_t> id = graph_.AddNode(std::move(nodes[i]));
    if (!id.ok()) return Finish(std::move(done), id);
    if (i == 0) first = *id;
  }
  Finish(std::move(done), absl::StatusOr<int64_t>(first));
}
void MemoryGraphStore::GetNode(int64_t id, int32_t type, Done<absl::StatusOr<std::optional<Node>>> done) {
  Finish(std::move(done), absl::StatusOr<std::optional<Node>>(graph_.GetNode(id, type)));
}
void MemoryGraphStore::UpdateNode(Node node, Done<absl::StatusOr<bool>> done) {
  Finish(std::move(done), graph_.UpdateNode(node));
}
void MemoryGraphStore::DeleteNode(int64_t id, int32_t type, Done<absl::StatusOr<bool>> done) {
  Finish(std::move(done), absl::StatusOr<bool>(graph_.DeleteNode(id, type)));
}
void MemoryGraphStore::ResetNodeIds(int64_t start_id, Done<absl::Status> done) {
  graph_.ResetNodeIds(start_id);
  Finish(std::move(done), absl::OkStatus());
}
void MemoryGraphStore::AddLink(Link link, Done<absl::StatusOr<bool>> done) {
  Finish(std::move(done), graph_.AddLink(link));
}
void MemoryGraphStore::AddLinks(int64_t id1, int64_t type, std::vector<Link> links,
                                Done<absl::StatusOr<uint64_t>> done) {
  uint64_t added = 0;
  for (Link& l : links) {
    l.id1 = id1;
    l.type = type;
    if (absl::Status s = CheckLink(l); !s.ok()) return Finish(std::move(done), absl::StatusOr<uint64_t>(s));
  }
  for (const Link& l : links) added += *graph_.AddLink(l) ? 1 : 0;
  Finish(std::move(done), absl::StatusOr<uint64_t>(added));
}
void MemoryGraphStore::DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge,
                                  Done<absl::StatusOr<bool>> done) {
  Finish(std::move(done), absl::StatusOr<bool>(graph_.DeleteLink(id1, type, id2, expunge)));
}
void MemoryGraphStore::GetLinks(int64_t id1, int64_t type, absl::Span<const int64_t> id2s,
                                Done<absl::StatusOr<std::vector<Link>>> done) {
  Finish(std::move(done), absl::StatusOr<std::vector<Link>>(graph_.GetLinks(id1, type, id2s)));
}
void MemoryGraphStore::GetLinkList(LinkRange range, Done<absl::StatusOr<std::vector<Link>>> done) {
  Finish(std::move(done), graph_.GetLinkList(range));
}
void MemoryGraphStore::CountLinks(int64_t id1, int64_t type, Done<absl::StatusOr<uint64_t>> done) {
  Finish(std::move(done), absl::StatusOr<uint64_t>(graph_.CountLinks(id1, type)));
}

}  // namespace farm::graph
