// The graph's object formats (Tao on FaRM, paper section 4.4). All integers
// little-endian; every object is a FaRM object (version, incarnation and line versions
// are the layers below's business). Each format starts with a tag and a format version,
// checked before anything else is read.
//
//   vertex  one per id that has a node or links, found through the id index
//           (index.h). u8 'V', u8 version, u8 flags (bit 0: a node exists),
//           u8 lists, u32 data bytes, i32 node type, i32 node time, i64 node version,
//           u8 data chunks (0: data inline), u8 list capacity, u16 0, u32 0; then
//           `list capacity` list heads (i64 type, u64 count of visible links, FatPtr
//           head block, FatPtr tail block, u64 load token, u64 changes, u32 blocks,
//           u32 index build lease, FatPtr root of the id2 index, FatPtr root of the block index —
//           format version 1 had only the first five, 56 bytes); then the node's data
//           inline, or `data chunks` FatPtrs to immutable chunk objects holding it in
//           order.
//   block   u8 'E', u8 version, u16 edges, u32 bytes of edges, FatPtr next block; then
//           the edges back to back, in (time, id2) descending order, each i64 id2,
//           i64 time, i32 version, u8 visibility, u8 data bytes, then the data.
//   chunk   u8 'C', u8 version, u16 0, u32 bytes, then the bytes (part of a node's data).
//
// A list is the blocks of one (id1, type), head first, newest edges first; it is kept
// consistent by these invariants (graph_tx.h enforces them, graph_reader.h relies on
// them):
//   1. edges are in (time, id2) descending order along the whole list; no block is empty;
//   2. every transaction that changes a list writes its head block (or makes a new head
//      and bumps the old one's incarnation, or frees it): a reader that walked several
//      blocks and finds the head's version unchanged has read one state of the list;
//   3. a block that is replaced (grown into a larger object, or emptied) is freed, and
//      the pointer to it rewritten in the same transaction.
// A long list also has two indexes (list_index.h), changed in the transactions that
// change the list; a list's `changes` counts the transactions that changed it.
#ifndef FARM_GRAPH_LAYOUT_H_
#define FARM_GRAPH_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "graph/types.h"

namespace farm::graph {

// Blocks and chunks; vertices have their own (version 2 added the list indexes).
inline constexpr uint8_t kFormatVersion = 1;
inline constexpr uint8_t kVertexFormatVersion = 2;
inline constexpr uint32_t kVertexHeaderBytes = 32;
inline constexpr uint32_t kListHeadBytes = 104;
inline constexpr uint32_t kListHeadBytesV1 = 56;
inline constexpr uint32_t kBlockHeaderBytes = 24;
inline constexpr uint32_t kEdgeHeaderBytes = 22;
inline constexpr uint32_t kChunkHeaderBytes = 8;
// Node data longer than this lives in chunks (keeps vertices, read by every operation
// on their id, small).
inline constexpr uint32_t kMaxInlineNodeData = 2048;
// A chunk's data: each is written by a transaction of its own (a commit record must fit
// one message).
inline constexpr uint32_t kChunkDataBytes = 32 * 1024;
// A block grows (is reallocated larger) up to this size, then splits.
inline constexpr uint32_t kMaxBlockBytes = 4096;

struct ListHead {
  int64_t type = 0;
  uint64_t count = 0;
  FatPtr head;
  FatPtr tail;
  // Nonzero while a load appends to the list (graph_tx.h, LoadLinksTx): every other
  // change of the list clears it, so the load's next step takes the general path.
  uint64_t load_token = 0;
  // Transactions that changed the list (an index build checks nothing changed while it
  // built); its blocks.
  uint64_t changes = 0;
  uint32_t blocks = 0;
  // While an index build holds it (unix seconds it ends at; 0: none), writers of the
  // list wait (list_index_build.h).
  uint32_t build_lease = 0;
  // The list's indexes (list_index.h), both null or both set: id2 -> time, and each
  // block's last (oldest) edge -> the block.
  FatPtr by_id2;
  FatPtr by_key;

  bool indexed() const { return !by_id2.is_null(); }
};

struct Vertex {
  bool has_node = false;
  int32_t node_type = 0;
  int32_t node_time = 0;
  int64_t node_version = 0;
  uint32_t data_bytes = 0;
  std::string inline_data;       // when chunks is empty
  std::vector<FatPtr> chunks;    // else
  std::vector<ListHead> lists;

  ListHead* FindList(int64_t type);
  const ListHead* FindList(int64_t type) const;
  // Bytes the encoding takes with room for `list_capacity` heads.
  uint32_t EncodedBytes(uint32_t list_capacity) const;
};

absl::StatusOr<Vertex> DecodeVertex(std::span<const char> bytes);
// The list heads a vertex object of `object_bytes` has room for, with v's data; nullopt
// when v (its lists and data) does not fit.
std::optional<uint32_t> ListCapacityFor(const Vertex& v, uint32_t object_bytes);
// Encodes into `out` (the object's whole payload; the rest zeroed): false when it does
// not fit.
bool EncodeVertex(const Vertex& v, std::span<char> out);
// The object size to allocate for `v`, with room to grow.
uint32_t VertexAllocBytes(const Vertex& v);

// One edge of a block, viewing the block's bytes.
struct EdgeView {
  int64_t id2 = 0;
  int64_t time = 0;
  int32_t version = 0;
  Visibility visibility = Visibility::kVisible;
  absl::string_view data;
};

// (time, id2) descending: true when a comes before b in a list.
inline bool EdgeBefore(int64_t a_time, int64_t a_id2, int64_t b_time, int64_t b_id2) {
  return a_time != b_time ? a_time > b_time : a_id2 > b_id2;
}

// A block's header and edges, viewing `bytes` (valid while they are).
struct BlockView {
  FatPtr next;
  std::vector<EdgeView> edges;
};
absl::StatusOr<BlockView> DecodeBlock(std::span<const char> bytes);
// Calls f(edge) for each edge in order until it returns false, without allocating:
// the next pointer in *next. Internal (naming the defect) for a malformed block.
template <typename F>
absl::Status ForEachEdge(std::span<const char> bytes, FatPtr* next, F&& f);

// A block being changed in a transaction: owned edges.
struct Edge {
  int64_t id2 = 0;
  int64_t time = 0;
  int32_t version = 0;
  Visibility visibility = Visibility::kVisible;
  std::string data;

  static Edge Of(const Link& l) { return Edge{l.id2, l.time, l.version, l.visibility, l.data}; }
  static Edge Of(const EdgeView& e) { return Edge{e.id2, e.time, e.version, e.visibility, std::string(e.data)}; }
  Link ToLink(int64_t id1, int64_t type) const { return Link{id1, type, id2, visibility, version, time, data}; }
  uint32_t EncodedBytes() const { return kEdgeHeaderBytes + static_cast<uint32_t>(data.size()); }
};
struct Block {
  FatPtr next;
  std::vector<Edge> edges;
  uint32_t EncodedBytes() const;
};
absl::StatusOr<Block> DecodeOwnedBlock(std::span<const char> bytes);
bool EncodeBlock(const Block& b, std::span<char> out);
// The object size to allocate for a block of `bytes` encoded bytes (rounded up to
// leave room for a few more edges, at most kMaxBlockBytes unless the block is larger).
uint32_t BlockAllocBytes(uint32_t bytes);

// Chunks of a node's data.
std::string EncodeChunk(absl::string_view data);
absl::StatusOr<absl::string_view> DecodeChunk(std::span<const char> bytes);

// --- implementation of the template ---
namespace layout_internal {
absl::Status BlockHeader(std::span<const char> bytes, uint32_t* edges, uint32_t* edge_bytes, FatPtr* next);
bool EdgeAt(std::span<const char> bytes, uint32_t* offset, uint32_t end, EdgeView* e);
}  // namespace layout_internal

template <typename F>
absl::Status ForEachEdge(std::span<const char> bytes, FatPtr* next, F&& f) {
  uint32_t edges = 0, edge_bytes = 0;
  if (absl::Status s = layout_internal::BlockHeader(bytes, &edges, &edge_bytes, next); !s.ok()) return s;
  uint32_t offset = kBlockHeaderBytes;
  const uint32_t end = kBlockHeaderBytes + edge_bytes;
  for (uint32_t i = 0; i < edges; ++i) {
    EdgeView e;
    if (!layout_internal::EdgeAt(bytes, &offset, end, &e)) {
      return absl::InternalError("a graph block's edge runs past its end");
    }
    if (!f(e)) break;
  }
  return absl::OkStatus();
}

}  // namespace farm::graph

#endif  // FARM_GRAPH_LAYOUT_H_
