// ListEdit: an unindexed list of one (id1, type) read whole into a transaction, edited
// in memory and written back (the link updates and list reads of graph_tx.cc; an indexed
// list goes through list_index.h instead). Internal to graph_tx.cc: the contract of each
// member is stated at the member.
#ifndef FARM_GRAPH_LIST_EDIT_H_
#define FARM_GRAPH_LIST_EDIT_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/graph_tx.h"
#include "graph/layout.h"

namespace farm::graph {

// A list longer than this many blocks is taken for a cycle (a corrupt list).
inline constexpr size_t kMaxListBlocks = size_t{1} << 24;

struct ListEnds {
  FatPtr head;
  FatPtr tail;
  uint32_t blocks = 0;
};

// One block of a list being edited. Its edges are decoded only when an edit needs them
// (a list of a million links is scanned in place, not copied into strings).
struct ListBlock {
  ObjBuf* object = nullptr;  // null: a new block
  FatPtr next;               // the next block, as stored or as it will be written
  uint32_t stored_edges = 0; // edges in the object (while not decoded)
  std::optional<std::vector<Edge>> edges;  // decoded (or new)
  bool dirty = false;
};

// A list read into a transaction (every block, by txRead), edited in memory, then
// written back keeping the invariants of layout.h. Blocks sit in a deque, so a block's
// address stays put while blocks are added at either end (the only places Insert adds
// them): Find's map points at blocks.
class ListEdit {
 public:
  struct Position {
    ListBlock* block;
    size_t edge;
  };

  static Task<absl::StatusOr<ListEdit>> Read(TxScope& s, FatPtr head) {
    ListEdit edit;
    for (FatPtr p = head; !p.is_null();) {
      if (edit.blocks_.size() >= kMaxListBlocks) co_return absl::InternalError("corrupt graph list: a cycle");
      absl::StatusOr<ObjBuf*> object = co_await TxRead(s.tx, p);
      if (!object.ok()) co_return object.status();
      ListBlock b;
      b.object = *object;
      uint32_t edge_bytes = 0;
      if (absl::Status st = layout_internal::BlockHeader((*object)->data(), &b.stored_edges, &edge_bytes, &b.next);
          !st.ok()) {
        co_return st;
      }
      if (b.stored_edges == 0) co_return absl::InternalError("corrupt graph list: an empty block");
      p = b.next;
      edit.blocks_.push_back(std::move(b));
    }
    if (!edit.blocks_.empty()) edit.old_head_ = edit.blocks_[0].object;
    co_return edit;
  }

  // The edge of `id2`. The first call scans the blocks in place; a second builds a map
  // of the whole list (O(list) once, O(block) per call after).
  std::optional<Position> Find(int64_t id2) {
    if (!mapped_ && finds_++ > 0) {
      for (ListBlock& b : blocks_) {
        ScanEdges(b, [&](int64_t id, size_t) { block_of_[id] = &b; return true; });
      }
      mapped_ = true;
    }
    if (mapped_) {
      auto it = block_of_.find(id2);
      if (it == block_of_.end()) return std::nullopt;
      std::vector<Edge>& edges = Edges(*it->second);
      for (size_t e = 0; e < edges.size(); ++e) {
        if (edges[e].id2 == id2) return Position{it->second, e};
      }
      return std::nullopt;  // unreachable while the map is kept up to date
    }
    for (ListBlock& b : blocks_) {
      std::optional<size_t> at;
      ScanEdges(b, [&](int64_t id, size_t i) {
        if (id == id2) at = i;
        return !at.has_value();
      });
      if (at) return Position{&b, *at};
    }
    return std::nullopt;
  }
  Edge& At(Position p) { return Edges(*p.block)[p.edge]; }
  void Touch(Position p) { MarkDirty(p.block); }

  void Remove(Position p) {
    std::vector<Edge>& edges = Edges(*p.block);
    if (mapped_) block_of_.erase(edges[p.edge].id2);
    edges.erase(edges.begin() + static_cast<ptrdiff_t>(p.edge));
    MarkDirty(p.block);
  }

  // Inserts in (time, id2) descending order: into the first block whose last edge it
  // comes before, or the last block; a new head block when it would go first into a
  // full head (the common case: links added now), a new tail when it goes last into a
  // full tail (a load, oldest last).
  void Insert(Edge e) {
    const int64_t id2 = e.id2;
    ListBlock* into = Place(std::move(e));
    MarkDirty(into);
    if (mapped_) block_of_[id2] = into;
  }

  // Blocks changed so far (each is written at Finish, split if over kMaxBlockBytes):
  // bounds what one transaction writes.
  size_t dirty_blocks() const { return dirty_; }

  // Writes the list back into the transaction; its new ends. `hint`: where new blocks go
  // (the vertex, so a list lives with its source node).
  Task<absl::StatusOr<ListEnds>> Finish(TxScope& s, Addr hint) {
    if (!decode_error_.ok()) co_return decode_error_;
    SplitOversize();
    // Empty blocks leave the list (freed).
    std::deque<ListBlock> kept;
    for (ListBlock& b : blocks_) {
      if (!Empty(b)) {
        kept.push_back(std::move(b));
      } else if (b.object != nullptr) {
        if (absl::Status st = txFree(s.tx, b.object->ptr()); !st.ok()) co_return st;
      }
    }
    blocks_ = std::move(kept);
    // Changed blocks that do not fit their object move to a larger one (the old one is
    // freed).
    for (ListBlock& b : blocks_) {
      if (!b.dirty) continue;
      const uint32_t bytes = EncodedBytes(b);
      if (b.object != nullptr && b.object->data().size() >= bytes) continue;
      absl::StatusOr<ObjBuf*> fresh = co_await TxAlloc(s.tx, BlockAllocBytes(bytes), hint);
      if (!fresh.ok()) co_return fresh.status();
      if (b.object != nullptr) {
        if (absl::Status st = txFree(s.tx, b.object->ptr()); !st.ok()) co_return st;
      }
      b.object = *fresh;
    }
    // Invariant 2: the head is written; an old head that is no longer first gets a new
    // incarnation, so readers holding a pointer to it as the head notice. Every block is
    // named as it will be after the commit: this transaction may have renamed it in an
    // earlier edit (several link updates of a vertex share one: LinkUpdatesTx).
    std::vector<FatPtr> ptrs(blocks_.size());
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (blocks_[i].object == old_head_ && i > 0) {
        if (absl::Status st = objIncrementIncarnation(s.tx, blocks_[i].object); !st.ok()) co_return st;
        blocks_[i].dirty = true;
      }
      ptrs[i] = objCommittedPtr(*blocks_[i].object);
    }
    if (!blocks_.empty()) blocks_[0].dirty = true;
    for (size_t i = 0; i < blocks_.size(); ++i) {
      ListBlock& b = blocks_[i];
      const FatPtr next = i + 1 < blocks_.size() ? ptrs[i + 1] : FatPtr{};
      if (!(b.next == next)) {
        b.next = next;
        b.dirty = true;
      }
      if (!b.dirty) continue;
      if (!EncodeBlock(Block{b.next, Edges(b)}, b.object->data())) {
        co_return absl::InternalError("a graph block does not fit the object made for it");
      }
      if (!decode_error_.ok()) co_return decode_error_;
      if (absl::Status st = txWrite(s.tx, b.object); !st.ok()) co_return st;
    }
    if (blocks_.empty()) co_return ListEnds{};
    co_return ListEnds{ptrs.front(), ptrs.back(), static_cast<uint32_t>(blocks_.size())};
  }

  size_t blocks() const { return blocks_.size(); }

  // Every link, in list order (decodes every block).
  absl::StatusOr<std::vector<Link>> AllLinks(int64_t id1, int64_t type) {
    std::vector<Link> links;
    for (ListBlock& b : blocks_) {
      for (const Edge& e : Edges(b)) links.push_back(e.ToLink(id1, type));
    }
    if (!decode_error_.ok()) return decode_error_;
    return links;
  }
  absl::Status decode_error() const { return decode_error_; }

 private:
  // The block's edges, decoded on first use (a malformed block: empty, and the error is
  // kept for Finish).
  std::vector<Edge>& Edges(ListBlock& b) {
    if (!b.edges) {
      b.edges.emplace();
      FatPtr next;
      absl::Status st = ForEachEdge(b.object->data(), &next, [&](const EdgeView& e) {
        b.edges->push_back(Edge::Of(e));
        return true;
      });
      if (!st.ok() && decode_error_.ok()) decode_error_ = st;
    }
    return *b.edges;
  }
  // f(id2, index) for each edge until it returns false, in place when not decoded.
  template <typename F>
  void ScanEdges(ListBlock& b, F&& f) {
    if (b.edges) {
      for (size_t i = 0; i < b.edges->size(); ++i) {
        if (!f((*b.edges)[i].id2, i)) return;
      }
      return;
    }
    size_t i = 0;
    FatPtr next;
    absl::Status st = ForEachEdge(b.object->data(), &next, [&](const EdgeView& e) { return f(e.id2, i++); });
    if (!st.ok() && decode_error_.ok()) decode_error_ = st;
  }
  bool Empty(ListBlock& b) const { return b.edges ? b.edges->empty() : b.stored_edges == 0; }
  uint32_t EncodedBytes(ListBlock& b) {
    uint32_t n = kBlockHeaderBytes;
    for (const Edge& e : Edges(b)) n += e.EncodedBytes();
    return n;
  }

  // Blocks over kMaxBlockBytes are cut into pieces of at most 3/4 of it (the first keeps
  // its object; the others are new and follow it).
  void SplitOversize() {
    std::deque<ListBlock> out;
    for (ListBlock& b : blocks_) {
      if (!b.dirty || EncodedBytes(b) <= kMaxBlockBytes) {
        out.push_back(std::move(b));
        continue;
      }
      std::vector<Edge> edges = std::move(*b.edges);
      ListBlock piece{b.object, FatPtr{}, 0, std::vector<Edge>{}, true};
      uint32_t bytes = kBlockHeaderBytes;
      for (Edge& e : edges) {
        if (!piece.edges->empty() && bytes + e.EncodedBytes() > kMaxBlockBytes * 3 / 4) {
          out.push_back(std::move(piece));
          piece = ListBlock{nullptr, FatPtr{}, 0, std::vector<Edge>{}, true};
          bytes = kBlockHeaderBytes;
        }
        bytes += e.EncodedBytes();
        piece.edges->push_back(std::move(e));
      }
      out.push_back(std::move(piece));
    }
    blocks_ = std::move(out);
  }

  // Where Insert puts `e` (see there); the block it went into.
  ListBlock* Place(Edge e) {
    const uint32_t bytes = e.EncodedBytes();
    ListBlock* last = nullptr;  // the last non-empty block
    for (auto it = blocks_.rbegin(); it != blocks_.rend() && last == nullptr; ++it) {
      if (!Empty(*it)) last = &*it;
    }
    if (last != nullptr) {
      const Edge& oldest = Edges(*last).back();
      if (!EdgeBefore(e.time, e.id2, oldest.time, oldest.id2)) {
        // Older than every edge: at the end of the last block, or a new tail.
        if (EncodedBytes(*last) + bytes <= kMaxBlockBytes) {
          Edges(*last).push_back(std::move(e));
          return last;
        }
        return &NewBlock(blocks_.end(), std::move(e));
      }
    }
    for (size_t b = 0; b < blocks_.size(); ++b) {
      if (Empty(blocks_[b])) continue;
      std::vector<Edge>& edges = Edges(blocks_[b]);
      if (!EdgeBefore(e.time, e.id2, edges.back().time, edges.back().id2)) continue;
      auto at = std::find_if(edges.begin(), edges.end(),
                             [&](const Edge& x) { return EdgeBefore(e.time, e.id2, x.time, x.id2); });
      if (b == 0 && at == edges.begin() && EncodedBytes(blocks_[0]) + bytes > kMaxBlockBytes) {
        return &NewBlock(blocks_.begin(), std::move(e));
      }
      edges.insert(at, std::move(e));
      return &blocks_[b];
    }
    return &NewBlock(blocks_.end(), std::move(e));  // an empty list
  }

  // A new block holding `e`, at the front or the back (deque positions stay put).
  ListBlock& NewBlock(std::deque<ListBlock>::iterator where, Edge e) {
    ListBlock b{nullptr, FatPtr{}, 0, std::vector<Edge>{}, false};
    b.edges->push_back(std::move(e));
    if (where == blocks_.begin()) {
      blocks_.push_front(std::move(b));
      return blocks_.front();
    }
    blocks_.push_back(std::move(b));
    return blocks_.back();
  }

  void MarkDirty(ListBlock* b) {
    if (!b->dirty) ++dirty_;
    b->dirty = true;
  }

  std::deque<ListBlock> blocks_;
  size_t dirty_ = 0;
  ObjBuf* old_head_ = nullptr;
  size_t finds_ = 0;
  bool mapped_ = false;
  absl::flat_hash_map<int64_t, ListBlock*> block_of_;
  absl::Status decode_error_;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_LIST_EDIT_H_
