#include "graph/graph_reader.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/index.h"
#include "graph/memory_graph.h"
#include "graph/page.h"

namespace farm::graph {
namespace {

// co_await IndexGet(reader, key) -> StatusOr<optional<string>>: a lock-free lookup.
class IndexGet {
 public:
  IndexGet(kv::TableReader& reader, std::string key) : reader_(reader), key_(std::move(key)) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    reader_.Get(key_, [this, h](absl::StatusOr<std::optional<absl::string_view>> r) {
      if (!r.ok()) {
        result_ = r.status();
      } else if (!r->has_value()) {
        result_ = std::optional<std::string>();
      } else {
        result_ = std::optional<std::string>(std::string(**r));
      }
      h.resume();
    });
  }
  absl::StatusOr<std::optional<std::string>> await_resume() { return std::move(result_); }

 private:
  kv::TableReader& reader_;
  std::string key_;
  absl::StatusOr<std::optional<std::string>> result_ = absl::UnknownError("not completed");
};

template <typename Map, typename K, typename V>
void Remember(Map& map, const K& key, const V& value) {
  if (map.size() >= GraphReader::kCacheEntries) map.clear();
  map[key] = value;
}

// A list longer than this many blocks is taken for a cycle.
constexpr size_t kMaxListBlocksRead = size_t{1} << 24;

// Up to 2 ms, growing with the attempt, jittered.
absl::Duration RestartBackoff(uint32_t attempt, uint64_t& seed) {
  seed ^= seed << 13;
  seed ^= seed >> 7;
  seed ^= seed << 17;
  const int64_t cap_us = std::min<int64_t>(2000, int64_t{4} << std::min<uint32_t>(attempt, 9));
  return absl::Microseconds(1 + static_cast<int64_t>(seed % static_cast<uint64_t>(cap_us)));
}

bool Stale(const absl::Status& s) { return absl::IsFailedPrecondition(s); }

absl::Status GaveUp(absl::string_view what) {
  return absl::AbortedError(absl::StrCat(what, ": changed under ", GraphReader::kMaxRestarts, " reads in a row"));
}

}  // namespace

Task<absl::StatusOr<std::optional<FatPtr>>> GraphReader::VertexPtr(int64_t id) {
  if (auto it = vertices_.find(id); it != vertices_.end()) co_return std::optional<FatPtr>(it->second);
  ++stats_.index_lookups;
  absl::StatusOr<std::optional<std::string>> value = co_await IndexGet(index_, VertexKey(id));
  if (!value.ok()) co_return value.status();
  if (!value->has_value()) co_return std::optional<FatPtr>();
  std::optional<FatPtr> ptr = DecodeVertexPtr(**value);
  if (!ptr) co_return absl::InternalError(absl::StrCat("corrupt graph index: the entry of id ", id));
  Remember(vertices_, id, *ptr);
  co_return ptr;
}

Task<absl::StatusOr<std::optional<Vertex>>> GraphReader::ReadVertex(LockFreeOp& op, int64_t id) {
  for (uint32_t attempt = 0; attempt < kMaxRestarts; ++attempt) {
    absl::StatusOr<std::optional<FatPtr>> ptr = co_await VertexPtr(id);
    if (!ptr.ok()) co_return ptr.status();
    if (!ptr->has_value()) co_return std::optional<Vertex>();
    ++stats_.object_reads;
    absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(op, **ptr);
    if (!copy.ok()) {
      if (!Stale(copy.status())) co_return copy.status();
      ForgetVertex(id);
      ++stats_.restarts;
      continue;
    }
    absl::StatusOr<Vertex> v = DecodeVertex(std::span<const char>(copy->data.data(), copy->data.size()));
    if (!v.ok()) co_return v.status();
    co_return std::optional<Vertex>(std::move(*v));
  }
  co_return GaveUp("a vertex");
}

Task<absl::StatusOr<std::optional<Node>>> GraphReader::GetNode(int64_t id, int32_t type) {
  ++stats_.ops;
  LockFreeOp op = lockFreeStart(ctx_);
  for (uint32_t attempt = 0; attempt < kMaxRestarts; ++attempt) {
    absl::StatusOr<std::optional<Vertex>> v = co_await ReadVertex(op, id);
    if (!v.ok()) co_return v.status();
    if (!v->has_value() || !(*v)->has_node || (*v)->node_type != type) co_return std::optional<Node>();
    Vertex& vertex = **v;
    Node node{id, vertex.node_type, vertex.node_version, vertex.node_time, std::move(vertex.inline_data)};
    if (vertex.chunks.empty()) co_return std::optional<Node>(std::move(node));
    // Chunks are immutable: a freed one means the node changed; read it again.
    node.data.clear();
    bool stale = false;
    for (const FatPtr& c : vertex.chunks) {
      ++stats_.object_reads;
      absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(op, c);
      if (!copy.ok()) {
        if (!Stale(copy.status())) co_return copy.status();
        stale = true;
        break;
      }
      absl::StatusOr<absl::string_view> part = DecodeChunk(std::span<const char>(copy->data.data(), copy->data.size()));
      if (!part.ok()) co_return part.status();
      node.data.append(part->data(), part->size());
    }
    if (stale) {
      ++stats_.restarts;
      continue;
    }
    if (node.data.size() != vertex.data_bytes) co_return absl::InternalError("a node's chunks do not hold its data");
    co_return std::optional<Node>(std::move(node));
  }
  co_return GaveUp("a node");
}

Task<absl::StatusOr<uint64_t>> GraphReader::CountLinks(int64_t id1, int64_t type) {
  ++stats_.ops;
  LockFreeOp op = lockFreeStart(ctx_);
  absl::StatusOr<std::optional<Vertex>> v = co_await ReadVertex(op, id1);
  if (!v.ok()) co_return v.status();
  if (!v->has_value()) co_return uint64_t{0};
  const ListHead* list = (*v)->FindList(type);
  co_return list ? list->count : 0;
}

Task<absl::StatusOr<std::optional<std::vector<Link>>>> GraphReader::ReadPage(LockFreeOp& op, FatPtr head,
                                                                             const LinkRange& r) {
  PageBuilder page(r);
  uint64_t head_version = 0;
  FatPtr at = head;
  for (size_t blocks = 0; !at.is_null(); ++blocks) {
    ++stats_.object_reads;
    absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(op, at);
    if (!copy.ok()) {
      if (Stale(copy.status())) co_return std::optional<std::vector<Link>>();
      co_return copy.status();
    }
    if (blocks == 0) head_version = copy->version;
    FatPtr next;
    if (absl::Status s = page.Add(std::span<const char>(copy->data.data(), copy->data.size()), &next); !s.ok()) {
      co_return s;
    }
    if (page.complete() || next.is_null()) {
      if (blocks == 0) co_return std::optional<std::vector<Link>>(page.Take());
      break;
    }
    if (blocks > kMaxListBlocksRead) co_return absl::InternalError("corrupt graph list: a cycle");
    at = next;
  }
  // Several blocks: the page is one state of the list iff the head did not change.
  ++stats_.object_reads;
  absl::StatusOr<LockFreeCopy> again = co_await LockFreeRead(op, head);
  if (!again.ok()) {
    if (Stale(again.status())) co_return std::optional<std::vector<Link>>();
    co_return again.status();
  }
  if (again->version != head_version) co_return std::optional<std::vector<Link>>();
  co_return std::optional<std::vector<Link>>(page.Take());
}

Task<absl::StatusOr<std::vector<Link>>> GraphReader::GetLinkList(LinkRange range, uint32_t attempts) {
  ++stats_.ops;
  if (absl::Status s = CheckRange(range); !s.ok()) co_return s;
  const std::pair<int64_t, int64_t> key{range.id1, range.type};
  for (uint32_t attempt = 0; attempt < attempts; ++attempt) {
    if (attempt >= 2) {
      // A list under a stream of writers: give them room (outside any lock-free op,
      // which would hold the thread's epoch open).
      co_await SleepFor(ctx_, RestartBackoff(attempt, jitter_));
    }
    LockFreeOp op = lockFreeStart(ctx_);
    FatPtr head;
    if (auto it = heads_.find(key); it != heads_.end()) {
      head = it->second;
    } else {
      absl::StatusOr<std::optional<Vertex>> v = co_await ReadVertex(op, range.id1);
      if (!v.ok()) co_return v.status();
      const ListHead* list = v->has_value() ? (*v)->FindList(range.type) : nullptr;
      if (list == nullptr || list->head.is_null()) co_return std::vector<Link>();
      head = list->head;
      Remember(heads_, key, head);
    }
    absl::StatusOr<std::optional<std::vector<Link>>> page = co_await ReadPage(op, head, range);
    if (!page.ok()) co_return page.status();
    if (page->has_value()) co_return std::move(**page);
    heads_.erase(key);
    ++stats_.restarts;
  }
  co_return GaveUp("a link list");
}

}  // namespace farm::graph
