// GraphReader: the graph's lock-free reads on one worker thread (paper section 4.4):
// obj_get (GetNode) and assoc_count (CountLinks) are one lock-free READ of the vertex,
// assoc_range (GetLinkList) one READ of the list's head block when the page is in it —
// with the vertex's and the head's pointers cached here. Each result is linearizable.
//
// Why the cached pointers are safe: a vertex or head block that is replaced is freed,
// and a head that stops being first gets a new incarnation (layout.h, invariants 2-3),
// so a READ through a stale pointer fails (FailedPrecondition): the entry is dropped
// and the lookup starts again from the index. A page that spans several blocks is
// checked by reading the head again: an unchanged version means no transaction changed
// the list meanwhile (every one writes the head).
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// reader must outlive its operations.
#ifndef FARM_GRAPH_GRAPH_READER_H_
#define FARM_GRAPH_GRAPH_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/layout.h"
#include "graph/store.h"
#include "graph/types.h"
#include "kv/table_reader.h"

namespace farm::graph {

struct ReaderStats {
  uint64_t ops = 0;             // GetNode, CountLinks, GetLinkList
  uint64_t object_reads = 0;    // lock-free READs of vertices, blocks and chunks
  uint64_t index_lookups = 0;   // lookups in the id index (a READ each, mostly)
  uint64_t restarts = 0;        // stale pointers and pages changed while read
};

class GraphReader {
 public:
  // Entries kept per cache before it is cleared.
  static constexpr size_t kCacheEntries = size_t{1} << 16;
  // A read gives up after this many restarts (Aborted, retried by the caller).
  static constexpr uint32_t kMaxRestarts = 64;

  GraphReader(Context& ctx, kv::TableReader& index) : ctx_(ctx), index_(index) {}
  GraphReader(const GraphReader&) = delete;
  GraphReader& operator=(const GraphReader&) = delete;

  Task<absl::StatusOr<std::optional<Node>>> GetNode(int64_t id, int32_t type);
  Task<absl::StatusOr<uint64_t>> CountLinks(int64_t id1, int64_t type);
  // Aborted after `attempts` pages that changed while they were read (a list under a
  // stream of writers; GraphClient then reads it where it lives, in a transaction).
  Task<absl::StatusOr<std::vector<Link>>> GetLinkList(LinkRange range, uint32_t attempts = kMaxRestarts);

  // The vertex object of `id` (from the cache or the index); nullopt: the id has none.
  Task<absl::StatusOr<std::optional<FatPtr>>> VertexPtr(int64_t id);
  void ForgetVertex(int64_t id) { vertices_.erase(id); }

  const ReaderStats& stats() const { return stats_; }

 private:
  // The vertex of `id` read lock-free (nullopt: none), through the cache.
  Task<absl::StatusOr<std::optional<Vertex>>> ReadVertex(LockFreeOp& op, int64_t id);
  // One page of the list starting at `head`; nullopt when the list changed under it.
  Task<absl::StatusOr<std::optional<std::vector<Link>>>> ReadPage(LockFreeOp& op, FatPtr head, const LinkRange& r);

  Context& ctx_;
  kv::TableReader& index_;
  absl::flat_hash_map<int64_t, FatPtr> vertices_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, FatPtr> heads_;
  ReaderStats stats_;
  uint64_t jitter_ = 0x2545f4914f6cdd1dull;  // xorshift state for restart backoff
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_GRAPH_READER_H_
