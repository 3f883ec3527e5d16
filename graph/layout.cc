#include "graph/layout.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/api/wire.h"

namespace farm::graph {
namespace {

constexpr char kVertexTag = 'V';
constexpr char kBlockTag = 'E';
constexpr char kChunkTag = 'C';

FatPtr LoadPtr(const char* p) {
  FatPtr f;
  f.addr = Addr::FromRaw(LoadLe<uint64_t>(p));
  f.size = LoadLe<uint32_t>(p + 8);
  f.incarnation = LoadLe<uint32_t>(p + 12);
  return f;
}

void StorePtr(char* p, FatPtr f) {
  StoreLe<uint64_t>(p, f.addr.raw());
  StoreLe<uint32_t>(p + 8, f.size);
  StoreLe<uint32_t>(p + 12, f.incarnation);
}

absl::Status Corrupt(absl::string_view what) { return absl::InternalError(absl::StrCat("corrupt graph object: ", what)); }

uint32_t RoundUp(uint32_t n, uint32_t to) { return (n + to - 1) / to * to; }

}  // namespace

ListHead* Vertex::FindList(int64_t type) {
  for (ListHead& l : lists) {
    if (l.type == type) return &l;
  }
  return nullptr;
}

const ListHead* Vertex::FindList(int64_t type) const { return const_cast<Vertex*>(this)->FindList(type); }

uint32_t Vertex::EncodedBytes(uint32_t list_capacity) const {
  const uint32_t data = chunks.empty() ? static_cast<uint32_t>(inline_data.size()) : 16 * static_cast<uint32_t>(chunks.size());
  return kVertexHeaderBytes + kListHeadBytes * list_capacity + data;
}

absl::StatusOr<Vertex> DecodeVertex(std::span<const char> b) {
  if (b.size() < kVertexHeaderBytes) return Corrupt("a vertex shorter than its header");
  if (b[0] != kVertexTag) return Corrupt("not a vertex (tag)");
  const uint8_t version = static_cast<uint8_t>(b[1]);
  if (version != kVertexFormatVersion && version != 1) {
    return Corrupt(absl::StrFormat("a vertex of format version %d", version));
  }
  const uint32_t head_bytes = version == 1 ? kListHeadBytesV1 : kListHeadBytes;
  Vertex v;
  const uint8_t flags = static_cast<uint8_t>(b[2]);
  const uint32_t lists = static_cast<uint8_t>(b[3]);
  v.has_node = flags & 1;
  v.data_bytes = LoadLe<uint32_t>(b.data() + 4);
  v.node_type = LoadLe<int32_t>(b.data() + 8);
  v.node_time = LoadLe<int32_t>(b.data() + 12);
  v.node_version = LoadLe<int64_t>(b.data() + 16);
  const uint32_t chunks = static_cast<uint8_t>(b[24]);
  const uint32_t capacity = static_cast<uint8_t>(b[25]);
  if (lists > capacity) return Corrupt("a vertex with more lists than room for them");
  uint64_t at = kVertexHeaderBytes + uint64_t{head_bytes} * capacity;
  const uint64_t data = chunks == 0 ? v.data_bytes : 16ull * chunks;
  if (at + data > b.size()) {
    return Corrupt(absl::StrFormat("a vertex's data runs past its end (%d lists of room %d, %d data bytes in %d chunks, %d-byte object)",
                                   lists, capacity, v.data_bytes, chunks, b.size()));
  }
  if (chunks > 0 && v.data_bytes > uint64_t{chunks} * kChunkDataBytes) return Corrupt("a vertex's chunks are too few");
  v.lists.resize(lists);
  for (uint32_t i = 0; i < lists; ++i) {
    const char* p = b.data() + kVertexHeaderBytes + head_bytes * i;
    ListHead& l = v.lists[i];
    l.type = LoadLe<int64_t>(p);
    l.count = LoadLe<uint64_t>(p + 8);
    l.head = LoadPtr(p + 16);
    l.tail = LoadPtr(p + 32);
    l.load_token = LoadLe<uint64_t>(p + 48);
    if (version == 1) continue;
    l.changes = LoadLe<uint64_t>(p + 56);
    l.blocks = LoadLe<uint32_t>(p + 64);
    l.build_lease = LoadLe<uint32_t>(p + 68);
    l.by_id2 = LoadPtr(p + 72);
    l.by_key = LoadPtr(p + 88);
    if (l.by_id2.is_null() != l.by_key.is_null()) return Corrupt("a list with one of its two indexes");
  }
  if (chunks == 0) {
    v.inline_data.assign(b.data() + at, v.data_bytes);
  } else {
    for (uint32_t i = 0; i < chunks; ++i) v.chunks.push_back(LoadPtr(b.data() + at + 16 * i));
  }
  return v;
}

std::optional<uint32_t> ListCapacityFor(const Vertex& v, uint32_t object_bytes) {
  const uint32_t fixed = v.EncodedBytes(0);
  if (object_bytes < fixed) return std::nullopt;
  const uint32_t capacity = std::min<uint32_t>(255, (object_bytes - fixed) / kListHeadBytes);
  if (capacity < v.lists.size()) return std::nullopt;
  return capacity;
}

bool EncodeVertex(const Vertex& v, std::span<char> out) {
  const std::optional<uint32_t> room = ListCapacityFor(v, static_cast<uint32_t>(out.size()));
  if (!room || v.chunks.size() > 255) return false;
  const uint32_t capacity = *room;
  std::fill(out.begin(), out.end(), 0);
  char* p = out.data();
  p[0] = kVertexTag;
  p[1] = static_cast<char>(kVertexFormatVersion);
  p[2] = v.has_node ? 1 : 0;
  p[3] = static_cast<char>(v.lists.size());
  const uint32_t data_bytes = v.chunks.empty() ? static_cast<uint32_t>(v.inline_data.size()) : v.data_bytes;
  StoreLe<uint32_t>(p + 4, data_bytes);
  StoreLe<int32_t>(p + 8, v.node_type);
  StoreLe<int32_t>(p + 12, v.node_time);
  StoreLe<int64_t>(p + 16, v.node_version);
  p[24] = static_cast<char>(v.chunks.size());
  p[25] = static_cast<char>(capacity);
  for (size_t i = 0; i < v.lists.size(); ++i) {
    char* l = p + kVertexHeaderBytes + kListHeadBytes * i;
    StoreLe<int64_t>(l, v.lists[i].type);
    StoreLe<uint64_t>(l + 8, v.lists[i].count);
    StorePtr(l + 16, v.lists[i].head);
    StorePtr(l + 32, v.lists[i].tail);
    StoreLe<uint64_t>(l + 48, v.lists[i].load_token);
    StoreLe<uint64_t>(l + 56, v.lists[i].changes);
    StoreLe<uint32_t>(l + 64, v.lists[i].blocks);
    StoreLe<uint32_t>(l + 68, v.lists[i].build_lease);
    StorePtr(l + 72, v.lists[i].by_id2);
    StorePtr(l + 88, v.lists[i].by_key);
  }
  char* data = p + kVertexHeaderBytes + kListHeadBytes * capacity;
  if (v.chunks.empty()) {
    std::memcpy(data, v.inline_data.data(), v.inline_data.size());
  } else {
    for (size_t i = 0; i < v.chunks.size(); ++i) StorePtr(data + 16 * i, v.chunks[i]);
  }
  return true;
}

uint32_t VertexAllocBytes(const Vertex& v) {
  // Room for two more lists and data up to the next multiple of 64 (updates of a
  // node's data mostly stay within it).
  const uint32_t lists = static_cast<uint32_t>(v.lists.size()) + 2;
  return RoundUp(v.EncodedBytes(std::min<uint32_t>(lists, 255)) + 32, 64);
}

uint32_t Block::EncodedBytes() const {
  uint32_t n = kBlockHeaderBytes;
  for (const Edge& e : edges) n += e.EncodedBytes();
  return n;
}

namespace layout_internal {

absl::Status BlockHeader(std::span<const char> b, uint32_t* edges, uint32_t* edge_bytes, FatPtr* next) {
  if (b.size() < kBlockHeaderBytes) return Corrupt("a block shorter than its header");
  if (b[0] != kBlockTag) return Corrupt("not an edge block (tag)");
  if (static_cast<uint8_t>(b[1]) != kFormatVersion) {
    return Corrupt(absl::StrFormat("an edge block of format version %d", static_cast<uint8_t>(b[1])));
  }
  *edges = LoadLe<uint16_t>(b.data() + 2);
  *edge_bytes = LoadLe<uint32_t>(b.data() + 4);
  if (uint64_t{kBlockHeaderBytes} + *edge_bytes > b.size()) return Corrupt("a block's edges run past its end");
  *next = LoadPtr(b.data() + 8);
  return absl::OkStatus();
}

bool EdgeAt(std::span<const char> b, uint32_t* offset, uint32_t end, EdgeView* e) {
  if (*offset + kEdgeHeaderBytes > end) return false;
  const char* p = b.data() + *offset;
  e->id2 = LoadLe<int64_t>(p);
  e->time = LoadLe<int64_t>(p + 8);
  e->version = LoadLe<int32_t>(p + 16);
  e->visibility = p[20] ? Visibility::kVisible : Visibility::kHidden;
  const uint32_t data = static_cast<uint8_t>(p[21]);
  if (*offset + kEdgeHeaderBytes + data > end) return false;
  e->data = absl::string_view(p + kEdgeHeaderBytes, data);
  *offset += kEdgeHeaderBytes + data;
  return true;
}

}  // namespace layout_internal

absl::StatusOr<BlockView> DecodeBlock(std::span<const char> bytes) {
  BlockView v;
  absl::Status s = ForEachEdge(bytes, &v.next, [&](const EdgeView& e) {
    v.edges.push_back(e);
    return true;
  });
  if (!s.ok()) return s;
  return v;
}

absl::StatusOr<Block> DecodeOwnedBlock(std::span<const char> bytes) {
  Block b;
  absl::Status s = ForEachEdge(bytes, &b.next, [&](const EdgeView& e) {
    b.edges.push_back(Edge::Of(e));
    return true;
  });
  if (!s.ok()) return s;
  if (b.edges.empty()) return Corrupt("an empty edge block");
  return b;
}

bool EncodeBlock(const Block& b, std::span<char> out) {
  const uint32_t bytes = b.EncodedBytes();
  if (bytes > out.size() || b.edges.size() > UINT16_MAX) return false;
  std::fill(out.begin(), out.end(), 0);
  char* p = out.data();
  p[0] = kBlockTag;
  p[1] = static_cast<char>(kFormatVersion);
  StoreLe<uint16_t>(p + 2, static_cast<uint16_t>(b.edges.size()));
  StoreLe<uint32_t>(p + 4, bytes - kBlockHeaderBytes);
  StorePtr(p + 8, b.next);
  char* e = p + kBlockHeaderBytes;
  for (const Edge& edge : b.edges) {
    StoreLe<int64_t>(e, edge.id2);
    StoreLe<int64_t>(e + 8, edge.time);
    StoreLe<int32_t>(e + 16, edge.version);
    e[20] = edge.visibility == Visibility::kVisible ? 1 : 0;
    e[21] = static_cast<char>(edge.data.size());
    std::memcpy(e + kEdgeHeaderBytes, edge.data.data(), edge.data.size());
    e += edge.EncodedBytes();
  }
  return true;
}

uint32_t BlockAllocBytes(uint32_t bytes) {
  if (bytes >= kMaxBlockBytes) return bytes;
  // Twice what it holds (a few more edges fit before it must grow), at least 128 B.
  return std::min(kMaxBlockBytes, std::max<uint32_t>(128, RoundUp(bytes * 2, 64)));
}

std::string EncodeChunk(absl::string_view data) {
  std::string out(kChunkHeaderBytes + data.size(), '\0');
  out[0] = kChunkTag;
  out[1] = static_cast<char>(kFormatVersion);
  StoreLe<uint32_t>(out.data() + 4, static_cast<uint32_t>(data.size()));
  std::memcpy(out.data() + kChunkHeaderBytes, data.data(), data.size());
  return out;
}

absl::StatusOr<absl::string_view> DecodeChunk(std::span<const char> b) {
  if (b.size() < kChunkHeaderBytes || b[0] != kChunkTag) return Corrupt("not a data chunk");
  if (static_cast<uint8_t>(b[1]) != kFormatVersion) return Corrupt("a data chunk of another format version");
  const uint32_t n = LoadLe<uint32_t>(b.data() + 4);
  if (uint64_t{kChunkHeaderBytes} + n > b.size()) return Corrupt("a data chunk runs past its end");
  return absl::string_view(b.data() + kChunkHeaderBytes, n);
}

}  // namespace farm::graph
