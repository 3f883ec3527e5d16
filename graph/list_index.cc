#include "graph/list_index.h"

#include <algorithm>
#include <utility>

namespace farm::graph {
namespace {

bool SameObject(FatPtr a, FatPtr b) { return !a.is_null() && a.addr == b.addr; }

// The transaction's reads are consistent only once it commits: objects read at
// different times may disagree while another transaction changes them. Aborted, so
// the operation runs again (a list that truly disagrees with its index keeps failing
// until the retries run out, with this message).
absl::Status Disagree() {
  return absl::AbortedError("a graph list and its index disagree (read while they changed, or corrupt)");
}

}  // namespace

IndexedList::IndexedList(Tx& tx, int64_t id1, ListHead& list, Addr hint)
    : tx_(tx), id1_(id1), list_(list), hint_(hint), by_id2_(tx, list.by_id2, hint), by_key_(tx, list.by_key, hint) {}

Task<absl::StatusOr<IndexedList::Blk*>> IndexedList::Load(FatPtr ptr) {
  if (auto it = by_address_.find(ptr.addr.raw()); it != by_address_.end()) co_return it->second;
  absl::StatusOr<ObjBuf*> object = co_await TxRead(tx_, ptr);
  if (!object.ok()) co_return object.status();
  absl::StatusOr<Block> block = DecodeOwnedBlock((*object)->data());
  if (!block.ok()) co_return block.status();
  if (block->edges.empty()) co_return absl::InternalError("corrupt graph list: an empty block");
  // Named as after the commit (an earlier operation of this transaction may have
  // renamed it; `ptr` may be either name).
  blocks_.push_back(Blk{*object, objCommittedPtr(**object), std::move(*block)});
  by_address_[ptr.addr.raw()] = &blocks_.back();
  co_return &blocks_.back();
}

Task<absl::StatusOr<IndexedList::Blk*>> IndexedList::NewBlock() {
  absl::StatusOr<ObjBuf*> object = co_await TxAlloc(tx_, kMaxBlockBytes, hint_);
  if (!object.ok()) co_return object.status();
  blocks_.push_back(Blk{*object, (*object)->ptr(), Block{}, true});
  by_address_[(*object)->ptr().addr.raw()] = &blocks_.back();
  ++list_.blocks;
  co_return &blocks_.back();
}

Task<absl::StatusOr<IndexedList::Blk*>> IndexedList::BlockFor(TreeKey key) {
  absl::StatusOr<std::optional<TreeEntry>> at = co_await by_key_.Ceil(key);
  if (!at.ok()) co_return at.status();
  if (!at->has_value()) {
    at = co_await by_key_.Last();
    if (!at.ok()) co_return at.status();
    if (!at->has_value()) co_return nullptr;
  }
  co_return co_await Load((*at)->value.ptr());
}

Task<absl::StatusOr<std::pair<IndexedList::Blk*, size_t>>> IndexedList::Locate(int64_t id2, int64_t time) {
  absl::StatusOr<Blk*> b = co_await BlockFor(ListKey(time, id2));
  if (!b.ok()) co_return b.status();
  if (*b == nullptr) co_return Disagree();
  const std::vector<Edge>& edges = (*b)->block.edges;
  for (size_t i = 0; i < edges.size(); ++i) {
    if (edges[i].id2 == id2) {
      if (edges[i].time != time) co_return Disagree();
      co_return std::make_pair(*b, i);
    }
  }
  co_return Disagree();
}

Task<absl::StatusOr<std::optional<Link>>> IndexedList::Get(int64_t id2) {
  absl::StatusOr<std::optional<TreeValue>> time = co_await by_id2_.Find(Id2Key(id2));
  if (!time.ok()) co_return time.status();
  if (!time->has_value()) co_return std::nullopt;
  absl::StatusOr<std::pair<Blk*, size_t>> at = co_await Locate(id2, static_cast<int64_t>((*time)->a));
  if (!at.ok()) co_return at.status();
  co_return at->first->block.edges[at->second].ToLink(id1_, list_.type);
}

Task<absl::StatusOr<bool>> IndexedList::Upsert(const Link& link, int* visible_delta) {
  const int visible = link.visibility == Visibility::kVisible ? 1 : 0;
  absl::StatusOr<std::optional<TreeValue>> time = co_await by_id2_.Find(Id2Key(link.id2));
  if (!time.ok()) co_return time.status();
  changed_ = true;
  const TreeValue new_time{static_cast<uint64_t>(link.time), 0};
  if (!time->has_value()) {
    if (absl::Status st = co_await InsertEdge(Edge::Of(link)); !st.ok()) co_return st;
    if (absl::Status st = co_await by_id2_.Put(Id2Key(link.id2), new_time); !st.ok()) co_return st;
    *visible_delta = visible;
    co_return true;
  }
  absl::StatusOr<std::pair<Blk*, size_t>> at = co_await Locate(link.id2, static_cast<int64_t>((*time)->a));
  if (!at.ok()) co_return at.status();
  auto [b, i] = *at;
  *visible_delta = visible - (b->block.edges[i].visibility == Visibility::kVisible ? 1 : 0);
  if (b->block.edges[i].time == link.time) {
    b->block.edges[i] = Edge::Of(link);  // same place in the order
    MarkDirty(b);
    if (absl::Status st = co_await Fit(b, false); !st.ok()) co_return st;
    co_return false;
  }
  if (absl::Status st = co_await RemoveEdge(b, i); !st.ok()) co_return st;
  if (absl::Status st = co_await InsertEdge(Edge::Of(link)); !st.ok()) co_return st;
  if (absl::Status st = co_await by_id2_.Put(Id2Key(link.id2), new_time); !st.ok()) co_return st;
  co_return false;
}

Task<absl::StatusOr<bool>> IndexedList::Delete(int64_t id2, bool expunge, int* visible_delta) {
  *visible_delta = 0;
  absl::StatusOr<std::optional<TreeValue>> time = co_await by_id2_.Find(Id2Key(id2));
  if (!time.ok()) co_return time.status();
  if (!time->has_value()) co_return false;
  absl::StatusOr<std::pair<Blk*, size_t>> at = co_await Locate(id2, static_cast<int64_t>((*time)->a));
  if (!at.ok()) co_return at.status();
  auto [b, i] = *at;
  const bool was_visible = b->block.edges[i].visibility == Visibility::kVisible;
  if (!was_visible && !expunge) co_return true;  // LinkBench: a hidden link stays as it is
  changed_ = true;
  *visible_delta = was_visible ? -1 : 0;
  if (!expunge) {
    b->block.edges[i].visibility = Visibility::kHidden;
    MarkDirty(b);
    co_return true;
  }
  if (absl::Status st = co_await RemoveEdge(b, i); !st.ok()) co_return st;
  absl::StatusOr<bool> erased = co_await by_id2_.Erase(Id2Key(id2));
  if (!erased.ok()) co_return erased.status();
  co_return true;
}

Task<absl::Status> IndexedList::InsertEdge(Edge e) {
  const TreeKey key = ListKey(e.time, e.id2);
  absl::StatusOr<Blk*> found = co_await BlockFor(key);
  if (!found.ok()) co_return found.status();
  Blk* b = *found;
  if (b == nullptr) {  // an empty list: its first block
    absl::StatusOr<Blk*> fresh = co_await NewBlock();
    if (!fresh.ok()) co_return fresh.status();
    (*fresh)->block.edges.push_back(std::move(e));
    list_.head = list_.tail = (*fresh)->ptr;
    co_return co_await by_key_.Put(key, TreeValue::Of((*fresh)->ptr));
  }
  const TreeKey old_last = LastKey(*b);
  std::vector<Edge>& edges = b->block.edges;
  const auto at = std::find_if(edges.begin(), edges.end(),
                               [&](const Edge& x) { return EdgeBefore(e.time, e.id2, x.time, x.id2); });
  const bool first = at == edges.begin();
  edges.insert(at, std::move(e));
  MarkDirty(b);
  if (old_last < key) {
    // Older than every edge: the last block's last key moves (invariant 2).
    absl::StatusOr<bool> erased = co_await by_key_.Erase(old_last);
    if (!erased.ok()) co_return erased.status();
    if (absl::Status st = co_await by_key_.Put(key, TreeValue::Of(b->ptr)); !st.ok()) co_return st;
  }
  co_return co_await Fit(b, first);
}

Task<absl::Status> IndexedList::RemoveEdge(Blk* b, size_t at) {
  const TreeKey old_last = LastKey(*b);
  const bool was_last = at + 1 == b->block.edges.size();
  b->block.edges.erase(b->block.edges.begin() + static_cast<ptrdiff_t>(at));
  MarkDirty(b);
  if (b->block.edges.empty()) co_return co_await Unlink(b, old_last, nullptr);
  if (!was_last) co_return absl::OkStatus();
  absl::StatusOr<bool> erased = co_await by_key_.Erase(old_last);
  if (!erased.ok()) co_return erased.status();
  co_return co_await by_key_.Put(LastKey(*b), TreeValue::Of(b->ptr));
}

Task<absl::Status> IndexedList::Fit(Blk* b, bool went_first) {
  const uint32_t bytes = b->block.EncodedBytes();
  if (bytes <= b->object->data().size()) co_return absl::OkStatus();
  if (bytes > kMaxBlockBytes && went_first && SameObject(list_.head, b->ptr)) {
    // The paper's rule: a link that goes first into a full head starts a new head, and
    // the old head gets a new incarnation (cached head pointers notice).
    Edge e = std::move(b->block.edges.front());
    b->block.edges.erase(b->block.edges.begin());
    const TreeKey key = ListKey(e.time, e.id2);
    absl::StatusOr<Blk*> head = co_await NewBlock();
    if (!head.ok()) co_return head.status();
    if (absl::Status st = objIncrementIncarnation(tx_, b->object); !st.ok()) co_return st;
    b->ptr = objCommittedPtr(*b->object);
    (*head)->block.edges.push_back(std::move(e));
    (*head)->block.next = b->ptr;
    if (SameObject(list_.tail, b->ptr)) list_.tail = b->ptr;
    list_.head = (*head)->ptr;
    if (absl::Status st = co_await by_key_.Put(LastKey(*b), TreeValue::Of(b->ptr)); !st.ok()) co_return st;
    co_return co_await by_key_.Put(key, TreeValue::Of((*head)->ptr));
  }
  if (bytes > kMaxBlockBytes) {
    // Split: b keeps the edges of the first half of the bytes, a new block after it
    // takes the others (and b's entry in by_key).
    const TreeKey old_last = LastKey(*b);
    std::vector<Edge>& edges = b->block.edges;
    size_t keep = 0;
    for (uint32_t kept = kBlockHeaderBytes; keep + 1 < edges.size() && kept + edges[keep].EncodedBytes() <= bytes / 2;
         ++keep) {
      kept += edges[keep].EncodedBytes();
    }
    keep = std::max<size_t>(keep, 1);
    absl::StatusOr<Blk*> rest = co_await NewBlock();
    if (!rest.ok()) co_return rest.status();
    (*rest)->block.edges.assign(std::make_move_iterator(edges.begin() + static_cast<ptrdiff_t>(keep)),
                                std::make_move_iterator(edges.end()));
    edges.resize(keep);
    (*rest)->block.next = b->block.next;
    b->block.next = (*rest)->ptr;
    if (SameObject(list_.tail, b->ptr)) list_.tail = (*rest)->ptr;
    if (absl::Status st = co_await by_key_.Put(old_last, TreeValue::Of((*rest)->ptr)); !st.ok()) co_return st;
    if (absl::Status st = co_await by_key_.Put(LastKey(*b), TreeValue::Of(b->ptr)); !st.ok()) co_return st;
    if (b->block.EncodedBytes() <= b->object->data().size()) co_return absl::OkStatus();
  }
  // b's object is too small (a block made before the list was indexed): its edges move
  // to a full-size block that takes its place.
  absl::StatusOr<Blk*> larger = co_await NewBlock();
  if (!larger.ok()) co_return larger.status();
  (*larger)->block = std::move(b->block);
  co_return co_await Unlink(b, LastKey(**larger), *larger);
}

Task<absl::Status> IndexedList::Unlink(Blk* b, TreeKey b_key, Blk* replacement) {
  const FatPtr successor = replacement != nullptr ? replacement->ptr : b->block.next;
  absl::StatusOr<std::optional<TreeEntry>> before = co_await by_key_.Before(b_key);
  if (!before.ok()) co_return before.status();
  Blk* previous = nullptr;
  if (before->has_value()) {
    absl::StatusOr<Blk*> p = co_await Load((*before)->value.ptr());
    if (!p.ok()) co_return p.status();
    previous = *p;
    if (!SameObject(previous->block.next, b->ptr)) co_return Disagree();
    previous->block.next = successor;
    MarkDirty(previous);
  } else {
    if (!SameObject(list_.head, b->ptr)) co_return Disagree();
    list_.head = successor;
  }
  if (SameObject(list_.tail, b->ptr)) {
    list_.tail = replacement != nullptr ? replacement->ptr : previous != nullptr ? previous->ptr : FatPtr{};
  }
  if (replacement != nullptr) {
    if (absl::Status st = co_await by_key_.Put(b_key, TreeValue::Of(replacement->ptr)); !st.ok()) co_return st;
  } else {
    absl::StatusOr<bool> erased = co_await by_key_.Erase(b_key);
    if (!erased.ok()) co_return erased.status();
    if (!*erased) co_return Disagree();
  }
  // Invariant 3 of layout.h: freed in the transaction that rewrote the pointers to it.
  if (absl::Status st = txFree(tx_, b->object->ptr()); !st.ok()) co_return st;
  b->freed = true;
  b->dirty = false;
  by_address_.erase(b->ptr.addr.raw());
  --list_.blocks;
  co_return absl::OkStatus();
}

void IndexedList::MarkDirty(Blk* b) { b->dirty = true; }

uint64_t IndexedList::dirty_bytes() const {
  uint64_t bytes = by_id2_.dirty_bytes() + by_key_.dirty_bytes();
  for (const Blk& b : blocks_) {
    if (b.dirty && !b.freed) bytes += b.object->data().size();
  }
  return bytes;
}

Task<absl::Status> IndexedList::Finish() {
  if (!changed_) co_return absl::OkStatus();
  // Invariant 2 of layout.h: the head is written.
  if (!list_.head.is_null()) {
    absl::StatusOr<Blk*> head = co_await Load(list_.head);
    if (!head.ok()) co_return head.status();
    MarkDirty(*head);
  }
  for (Blk& b : blocks_) {
    if (!b.dirty || b.freed) continue;
    if (b.block.edges.empty()) co_return absl::InternalError("an indexed graph list would keep an empty block");
    if (!EncodeBlock(b.block, b.object->data())) {
      co_return absl::InternalError("a graph block does not fit the object made for it");
    }
    if (absl::Status st = txWrite(tx_, b.object); !st.ok()) co_return st;
    b.dirty = false;
  }
  if (list_.head.is_null()) {
    // The list emptied: its indexes go with it.
    if (absl::Status st = co_await by_id2_.FreeAll(); !st.ok()) co_return st;
    if (absl::Status st = co_await by_key_.FreeAll(); !st.ok()) co_return st;
    list_.by_id2 = list_.by_key = FatPtr{};
    co_return absl::OkStatus();
  }
  absl::StatusOr<FatPtr> by_id2 = by_id2_.Finish();
  if (!by_id2.ok()) co_return by_id2.status();
  absl::StatusOr<FatPtr> by_key = by_key_.Finish();
  if (!by_key.ok()) co_return by_key.status();
  list_.by_id2 = *by_id2;
  list_.by_key = *by_key;
  co_return absl::OkStatus();
}

}  // namespace farm::graph
