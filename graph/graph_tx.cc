#include "graph/graph_tx.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/index.h"
#include "graph/list_edit.h"
#include "graph/list_index.h"
#include "graph/page.h"
#include "graph/run_tx.h"
#include "kv/layout.h"

namespace farm::graph {
namespace {

// The first error of an index update: the transaction's or the operation's own.
absl::Status IndexResult(const absl::StatusOr<std::vector<kv::KeyOpResult>>& r) {
  if (!r.ok()) return r.status();
  for (const kv::KeyOpResult& k : *r) {
    if (!k.status.ok()) return k.status;
  }
  return absl::OkStatus();
}

Task<absl::Status> PutIndex(TxScope& s, int64_t id, FatPtr vertex) {
  std::vector<kv::KeyOp> ops(1);
  ops[0].kind = kv::OpKind::kPut;
  ops[0].value = EncodeVertexPtr(vertex);
  co_return IndexResult(co_await kv::ApplyToKey(s.tx, s.index, s.index_writes, VertexKey(id), std::move(ops)));
}

void SetNode(Vertex& v, const Node& node, std::vector<FatPtr> chunks) {
  v.has_node = true;
  v.node_type = node.type;
  v.node_time = node.time;
  v.node_version = node.version;
  v.data_bytes = static_cast<uint32_t>(node.data.size());
  v.chunks = std::move(chunks);
  if (v.chunks.empty()) {
    v.inline_data = node.data;
  } else {
    v.inline_data.clear();
  }
}

absl::Status FreeChunks(Tx& tx, const Vertex& v) {
  for (const FatPtr& c : v.chunks) {
    if (absl::Status s = txFree(tx, c); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// A writer of a list whose indexes are being built waits (RunTx retries it).
absl::Status BuildingError() { return absl::AbortedError("the list's indexes are being built"); }

void CountIndexedOp(const TxScope& s, const IndexedList& list) {
  if (s.stats == nullptr) return;
  ++s.stats->indexed_ops;
  s.stats->indexed_reads += list.objects_read();
}

// The vertex's list of `type`, added (empty) when missing.
ListHead& ListOf(Vertex& v, int64_t type) {
  if (ListHead* l = v.FindList(type)) return *l;
  v.lists.push_back(ListHead{type, 0, FatPtr{}});
  return v.lists.back();
}

void DropIfEmpty(Vertex& v, int64_t type) {
  std::erase_if(v.lists, [&](const ListHead& l) { return l.type == type && l.head.is_null() && l.count == 0; });
}

// Invariants 1 and 2 of list_index.h for `list`, whose links (in list order) are
// `links`: the trees hold exactly the links' times and the blocks' last keys and
// pointers, and the block count is right.
Task<absl::Status> CheckListIndex(Tx& tx, const ListHead& list, const std::vector<Link>& links) {
  const Addr nowhere;
  TxTree id2_tree(tx, list.by_id2, nowhere);
  absl::StatusOr<std::vector<TreeEntry>> by_id2 = co_await id2_tree.All();
  if (!by_id2.ok()) co_return by_id2.status();
  std::vector<TreeEntry> expected;
  for (const Link& l : links) expected.push_back(TreeEntry{Id2Key(l.id2), TreeValue{static_cast<uint64_t>(l.time), 0}});
  std::sort(expected.begin(), expected.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.key < b.key; });
  if (by_id2->size() != expected.size()) {
    co_return absl::InternalError(absl::StrCat("the id2 index has ", by_id2->size(), " links, the list ", expected.size()));
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!((*by_id2)[i].key == expected[i].key) || !((*by_id2)[i].value == expected[i].value)) {
      co_return absl::InternalError(absl::StrCat("the id2 index differs from the list at id2 ", expected[i].key.lo));
    }
  }
  TxTree key_tree(tx, list.by_key, nowhere);
  absl::StatusOr<std::vector<TreeEntry>> by_key = co_await key_tree.All();
  if (!by_key.ok()) co_return by_key.status();
  std::vector<TreeEntry> blocks;
  for (FatPtr p = list.head; !p.is_null();) {
    absl::StatusOr<ObjBuf*> object = co_await TxRead(tx, p);
    if (!object.ok()) co_return object.status();
    absl::StatusOr<Block> b = DecodeOwnedBlock((*object)->data());
    if (!b.ok()) co_return b.status();
    if (b->edges.empty()) co_return absl::InternalError("an indexed list has an empty block");
    blocks.push_back(TreeEntry{ListKey(b->edges.back().time, b->edges.back().id2), TreeValue::Of(p)});
    p = b->next;
  }
  if (blocks.size() != list.blocks) {
    co_return absl::InternalError(absl::StrCat("the list counts ", list.blocks, " blocks and has ", blocks.size()));
  }
  if (!list.tail.is_null() && !blocks.empty() && !(blocks.back().value.ptr() == list.tail)) {
    co_return absl::InternalError("the list's tail is not its last block");
  }
  if (by_key->size() != blocks.size()) {
    co_return absl::InternalError(absl::StrCat("the block index has ", by_key->size(), " blocks, the list ", blocks.size()));
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!((*by_key)[i].key == blocks[i].key) || !((*by_key)[i].value == blocks[i].value)) {
      co_return absl::InternalError(absl::StrCat("the block index differs from the list at block ", i));
    }
  }
  co_return absl::OkStatus();
}

}  // namespace

Task<absl::StatusOr<VertexInTx>> ReadVertex(TxScope& s, int64_t id) {
  VertexInTx out;
  out.id = id;
  absl::StatusOr<std::optional<std::string>> value = co_await kv::LookupInTx(s.tx, s.index, VertexKey(id));
  if (!value.ok()) co_return value.status();
  if (!value->has_value()) co_return out;
  std::optional<FatPtr> ptr = DecodeVertexPtr(**value);
  if (!ptr) co_return absl::InternalError(absl::StrCat("corrupt graph index: the entry of id ", id));
  absl::StatusOr<ObjBuf*> object = co_await TxRead(s.tx, *ptr);
  if (!object.ok()) co_return object.status();
  absl::StatusOr<Vertex> v = DecodeVertex((*object)->data());
  if (!v.ok()) co_return v.status();
  out.object = *object;
  out.v = std::move(*v);
  co_return out;
}

Task<absl::Status> StoreVertex(TxScope& s, VertexInTx& vertex) {
  if (vertex.object != nullptr && EncodeVertex(vertex.v, vertex.object->data())) {
    co_return txWrite(s.tx, vertex.object);
  }
  const Addr hint = vertex.object != nullptr ? vertex.object->ptr().addr : VertexHome(s.index, vertex.id);
  absl::StatusOr<ObjBuf*> fresh = co_await TxAlloc(s.tx, VertexAllocBytes(vertex.v), hint);
  if (!fresh.ok()) co_return fresh.status();
  if (!EncodeVertex(vertex.v, (*fresh)->data())) co_return absl::InternalError("a vertex does not fit the object made for it");
  if (absl::Status st = txWrite(s.tx, *fresh); !st.ok()) co_return st;
  if (absl::Status st = co_await PutIndex(s, vertex.id, (*fresh)->ptr()); !st.ok()) co_return st;
  if (vertex.object != nullptr) {
    if (absl::Status st = txFree(s.tx, vertex.object->ptr()); !st.ok()) co_return st;
  }
  vertex.object = *fresh;
  co_return absl::OkStatus();
}

Task<absl::StatusOr<size_t>> PutNodesTx(TxScope& s, absl::Span<const Node> nodes, uint64_t max_write_bytes,
                                        absl::Span<const std::vector<FatPtr>> chunks) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0 && txWriteBytes(s.tx) >= max_write_bytes) co_return i;
    absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, nodes[i].id);
    if (!vertex.ok()) co_return vertex.status();
    if (absl::Status st = FreeChunks(s.tx, vertex->v); !st.ok()) co_return st;
    SetNode(vertex->v, nodes[i], chunks.empty() ? std::vector<FatPtr>{} : chunks[i]);
    if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  }
  co_return nodes.size();
}

Task<absl::StatusOr<bool>> UpdateNodeTx(TxScope& s, const Node& node, std::vector<FatPtr> chunks) {
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, node.id);
  if (!vertex.ok()) co_return vertex.status();
  if (vertex->object == nullptr || !vertex->v.has_node || vertex->v.node_type != node.type) co_return false;
  if (absl::Status st = FreeChunks(s.tx, vertex->v); !st.ok()) co_return st;
  SetNode(vertex->v, node, std::move(chunks));
  if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  co_return true;
}

Task<absl::StatusOr<bool>> DeleteNodeTx(TxScope& s, int64_t id, int32_t type) {
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id);
  if (!vertex.ok()) co_return vertex.status();
  if (vertex->object == nullptr || !vertex->v.has_node || vertex->v.node_type != type) co_return false;
  if (absl::Status st = FreeChunks(s.tx, vertex->v); !st.ok()) co_return st;
  SetNode(vertex->v, Node{}, {});
  vertex->v.has_node = false;
  if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  co_return true;
}

Task<absl::Status> ResetNodeIdsTx(TxScope& s, int64_t start_id) {
  std::vector<kv::KeyOp> ops(1);
  ops[0].kind = kv::OpKind::kPut;
  ops[0].value = absl::StrCat(start_id - 1);
  co_return IndexResult(co_await kv::ApplyToKey(s.tx, s.index, s.index_writes, std::string(kNextNodeIdKey), std::move(ops)));
}

Task<absl::StatusOr<AddLinksResult>> AddLinksTx(TxScope& s, int64_t id1, int64_t type, absl::Span<const Link> links,
                                                uint32_t* walked) {
  if (walked != nullptr) *walked = 0;
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  if (ListHead* list = vertex->object ? vertex->v.FindList(type) : nullptr; list != nullptr && list->indexed()) {
    IndexedList edit(s.tx, id1, *list, vertex->object->ptr().addr);
    AddLinksResult result;
    int64_t count = static_cast<int64_t>(list->count);
    for (const Link& link : links) {
      if (result.applied > 0 && edit.dirty_bytes() >= kMaxIndexedDirtyBytes) break;
      int delta = 0;
      absl::StatusOr<bool> added = co_await edit.Upsert(link, &delta);
      if (!added.ok()) co_return added.status();
      ++result.applied;
      result.added += *added ? 1 : 0;
      count += delta;
    }
    if (absl::Status st = co_await edit.Finish(); !st.ok()) co_return st;
    CountIndexedOp(s, edit);
    list->count = static_cast<uint64_t>(count);
    list->load_token = 0;
    ++list->changes;
    if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
    co_return result;
  }
  const ListHead before = vertex->v.FindList(type) ? *vertex->v.FindList(type) : ListHead{type, 0, FatPtr{}};
  if (BuildLeaseHeld(before, absl::Now())) co_return BuildingError();
  absl::StatusOr<ListEdit> edit = co_await ListEdit::Read(s, before.head);
  if (!edit.ok()) co_return edit.status();
  uint64_t count = before.count;
  AddLinksResult result;
  for (const Link& link : links) {
    if (result.applied > 0 && edit->dirty_blocks() >= kMaxDirtyBlocksPerTx) break;
    ++result.applied;
    const bool visible = link.visibility == Visibility::kVisible;
    std::optional<ListEdit::Position> at = edit->Find(link.id2);
    if (!at) {
      edit->Insert(Edge::Of(link));
      count += visible ? 1 : 0;
      ++result.added;
      continue;
    }
    const Edge& old = edit->At(*at);
    const bool was_visible = old.visibility == Visibility::kVisible;
    if (visible && !was_visible) ++count;
    if (!visible && was_visible) --count;
    if (old.time == link.time) {
      edit->At(*at) = Edge::Of(link);  // same place in the order
      edit->Touch(*at);
    } else {
      edit->Remove(*at);
      edit->Insert(Edge::Of(link));
    }
  }
  // Where the list lives: with its vertex (made now if the id has none yet).
  if (vertex->object == nullptr) {
    ListOf(vertex->v, type);
    if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  }
  absl::StatusOr<ListEnds> ends = co_await edit->Finish(s, vertex->object->ptr().addr);
  if (!ends.ok()) co_return ends.status();
  ListHead& list = ListOf(vertex->v, type);
  list.count = count;
  list.head = ends->head;
  list.tail = ends->tail;
  list.blocks = ends->blocks;
  list.load_token = 0;  // a load under way goes on by the general path
  ++list.changes;
  if (walked != nullptr) *walked = ends->blocks;
  if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  co_return result;
}

Task<absl::StatusOr<bool>> DeleteLinkTx(TxScope& s, int64_t id1, int64_t type, int64_t id2, bool expunge,
                                        uint32_t* walked) {
  if (walked != nullptr) *walked = 0;
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  if (vertex->object == nullptr) co_return false;
  ListHead* list = vertex->v.FindList(type);
  if (list == nullptr) co_return false;
  if (list->indexed()) {
    IndexedList edit(s.tx, id1, *list, vertex->object->ptr().addr);
    int delta = 0;
    absl::StatusOr<bool> found = co_await edit.Delete(id2, expunge, &delta);
    if (!found.ok()) co_return found.status();
    CountIndexedOp(s, edit);
    if (!edit.changed()) co_return *found;
    if (absl::Status st = co_await edit.Finish(); !st.ok()) co_return st;
    list->count = static_cast<uint64_t>(static_cast<int64_t>(list->count) + delta);
    list->load_token = 0;
    ++list->changes;
    DropIfEmpty(vertex->v, type);
    if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
    co_return *found;
  }
  if (BuildLeaseHeld(*list, absl::Now())) co_return BuildingError();
  absl::StatusOr<ListEdit> edit = co_await ListEdit::Read(s, list->head);
  if (!edit.ok()) co_return edit.status();
  if (walked != nullptr) *walked = static_cast<uint32_t>(edit->blocks());
  std::optional<ListEdit::Position> at = edit->Find(id2);
  if (!at) co_return false;
  const bool was_visible = edit->At(*at).visibility == Visibility::kVisible;
  if (!was_visible && !expunge) co_return true;  // LinkBench: a hidden link stays as it is
  if (expunge) {
    edit->Remove(*at);
  } else {
    edit->At(*at).visibility = Visibility::kHidden;
    edit->Touch(*at);
  }
  absl::StatusOr<ListEnds> ends = co_await edit->Finish(s, vertex->object->ptr().addr);
  if (!ends.ok()) co_return ends.status();
  list = vertex->v.FindList(type);
  list->head = ends->head;
  list->tail = ends->tail;
  list->blocks = ends->blocks;
  list->load_token = 0;
  ++list->changes;
  if (was_visible) --list->count;
  DropIfEmpty(vertex->v, type);
  if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  co_return true;
}

Task<absl::StatusOr<LinkUpdatesResult>> LinkUpdatesTx(TxScope& s, int64_t id1, absl::Span<const LinkUpdate> updates,
                                                      uint64_t max_write_bytes) {
  LinkUpdatesResult r;
  for (const LinkUpdate& u : updates) {
    if (!r.answers.empty() && txWriteBytes(s.tx) >= max_write_bytes) break;
    uint32_t walked = 0;
    if (u.remove) {
      absl::StatusOr<bool> found = co_await DeleteLinkTx(s, id1, u.link.type, u.link.id2, u.expunge, &walked);
      if (!found.ok()) co_return found.status();
      r.answers.push_back(*found);
    } else {
      absl::StatusOr<AddLinksResult> added =
          co_await AddLinksTx(s, id1, u.link.type, absl::MakeConstSpan(&u.link, 1), &walked);
      if (!added.ok()) co_return added.status();
      r.answers.push_back(added->added == 1);
    }
    r.walked.push_back(walked);
  }
  co_return r;
}

Task<absl::StatusOr<std::vector<Link>>> GetLinksTx(TxScope& s, int64_t id1, int64_t type,
                                                   absl::Span<const int64_t> id2s, uint32_t* walked) {
  if (walked != nullptr) *walked = 0;
  std::vector<Link> found;
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  ListHead* list = vertex->object ? vertex->v.FindList(type) : nullptr;
  if (list == nullptr) co_return found;
  auto repeated = [&](size_t i) {
    return std::find(id2s.begin(), id2s.begin() + static_cast<ptrdiff_t>(i), id2s[i]) !=
           id2s.begin() + static_cast<ptrdiff_t>(i);
  };
  if (list->indexed()) {
    IndexedList index(s.tx, id1, *list, vertex->object->ptr().addr);
    for (size_t i = 0; i < id2s.size(); ++i) {
      if (repeated(i)) continue;
      absl::StatusOr<std::optional<Link>> link = co_await index.Get(id2s[i]);
      if (!link.ok()) co_return link.status();
      if (link->has_value()) found.push_back(std::move(**link));
    }
    CountIndexedOp(s, index);
    co_return found;
  }
  absl::StatusOr<ListEdit> edit = co_await ListEdit::Read(s, list->head);
  if (!edit.ok()) co_return edit.status();
  if (walked != nullptr) *walked = static_cast<uint32_t>(edit->blocks());
  for (size_t i = 0; i < id2s.size(); ++i) {
    if (repeated(i)) continue;
    if (std::optional<ListEdit::Position> at = edit->Find(id2s[i])) found.push_back(edit->At(*at).ToLink(id1, type));
  }
  co_return found;
}

Task<absl::StatusOr<std::optional<uint64_t>>> LoadLinksTx(TxScope& s, int64_t id1, int64_t type, uint64_t token,
                                                          absl::Span<const Link> links) {
  using Result = std::optional<uint64_t>;
  if (links.empty()) co_return Result(0);
  for (size_t i = 1; i < links.size(); ++i) {
    if (!EdgeBefore(links[i - 1].time, links[i - 1].id2, links[i].time, links[i].id2)) co_return Result();
  }
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  const ListHead* found = vertex->object ? vertex->v.FindList(type) : nullptr;
  const bool fresh = found == nullptr || (found->head.is_null() && found->count == 0);
  if (!fresh && found->load_token != token) co_return Result();
  if (found != nullptr && found->indexed()) co_return Result();  // upserts keep the indexes
  if (found != nullptr && BuildLeaseHeld(*found, absl::Now())) co_return BuildingError();
  ListOf(vertex->v, type);  // (a vertex may have a node and no list of this type yet)
  if (vertex->object == nullptr) {
    if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  }
  ListHead list = *vertex->v.FindList(type);
  const Addr hint = vertex->object->ptr().addr;
  // The tail, to append to; the head, written for invariant 2 (one object when the
  // list has one block).
  ObjBuf* tail = nullptr;
  Block tail_block;
  if (!list.tail.is_null()) {
    absl::StatusOr<ObjBuf*> t = co_await TxRead(s.tx, list.tail);
    if (!t.ok()) co_return t.status();
    absl::StatusOr<Block> b = DecodeOwnedBlock((*t)->data());
    if (!b.ok()) co_return b.status();
    if (!b->next.is_null()) co_return absl::InternalError("corrupt graph list: its tail has a next block");
    const Edge& oldest = b->edges.back();
    if (!EdgeBefore(oldest.time, oldest.id2, links.front().time, links.front().id2)) co_return Result();
    tail = *t;
    tail_block = std::move(*b);
  }
  // The edges go into the tail's room, then into new blocks of kMaxBlockBytes; the last
  // new block's object is sized for what it holds (BlockAllocBytes), so a short list
  // (most of a load's) costs its edges, not a whole block, in memory and in the commit
  // record; a later step of the load fills its room before it starts another.
  uint64_t visible = 0;
  std::vector<std::pair<ObjBuf*, Block>> fresh_blocks;
  Block* into = tail ? &tail_block : nullptr;
  uint32_t room = tail ? static_cast<uint32_t>(tail->data().size()) - tail_block.EncodedBytes() : 0;
  for (const Link& l : links) {
    Edge e = Edge::Of(l);
    if (into == nullptr || e.EncodedBytes() > room) {
      fresh_blocks.emplace_back(nullptr, Block{});
      into = &fresh_blocks.back().second;
      room = kMaxBlockBytes - kBlockHeaderBytes;
    }
    room -= e.EncodedBytes();
    visible += l.visibility == Visibility::kVisible ? 1 : 0;
    into->edges.push_back(std::move(e));
  }
  for (size_t i = 0; i < fresh_blocks.size(); ++i) {
    const uint32_t bytes =
        i + 1 < fresh_blocks.size() ? kMaxBlockBytes : BlockAllocBytes(fresh_blocks[i].second.EncodedBytes());
    absl::StatusOr<ObjBuf*> object = co_await TxAlloc(s.tx, bytes, hint);
    if (!object.ok()) co_return object.status();
    fresh_blocks[i].first = *object;
  }
  // Link the new blocks after the tail, and write what changed.
  for (size_t i = 0; i + 1 < fresh_blocks.size(); ++i) fresh_blocks[i].second.next = fresh_blocks[i + 1].first->ptr();
  if (tail != nullptr && !fresh_blocks.empty()) tail_block.next = fresh_blocks.front().first->ptr();
  auto write = [&](ObjBuf* object, const Block& b) -> absl::Status {
    if (!EncodeBlock(b, object->data())) return absl::InternalError("a graph block does not fit its object");
    return txWrite(s.tx, object);
  };
  if (tail != nullptr) {
    if (absl::Status st = write(tail, tail_block); !st.ok()) co_return st;
  }
  for (auto& [object, b] : fresh_blocks) {
    if (absl::Status st = write(object, b); !st.ok()) co_return st;
  }
  if (!list.head.is_null() && !(tail != nullptr && list.head == list.tail)) {
    absl::StatusOr<ObjBuf*> head = co_await TxRead(s.tx, list.head);
    if (!head.ok()) co_return head.status();
    if (absl::Status st = txWrite(s.tx, *head); !st.ok()) co_return st;
  }
  ListHead& out = *vertex->v.FindList(type);
  if (out.head.is_null()) out.head = fresh_blocks.front().first->ptr();
  if (!fresh_blocks.empty()) out.tail = fresh_blocks.back().first->ptr();
  out.count += visible;
  out.blocks += static_cast<uint32_t>(fresh_blocks.size());
  out.load_token = token;
  ++out.changes;
  if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
  co_return Result(links.size());
}

Task<absl::StatusOr<LoadListsResult>> LoadListsTx(TxScope& s, absl::Span<const LinkList> lists, uint64_t token,
                                                  uint64_t max_write_bytes) {
  LoadListsResult r;
  for (; r.taken < lists.size(); ++r.taken) {
    if (r.taken > 0 && txWriteBytes(s.tx) >= max_write_bytes) break;
    const LinkList& list = lists[r.taken];
    absl::StatusOr<std::optional<uint64_t>> added = co_await LoadLinksTx(s, list.id1, list.type, token, list.links);
    if (!added.ok()) co_return added.status();
    if (added->has_value()) {
      r.added += **added;
    } else {
      r.declined.push_back(r.taken);
    }
  }
  co_return r;
}

Task<absl::StatusOr<std::vector<Link>>> GetLinkListTx(TxScope& s, const LinkRange& range) {
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, range.id1);
  if (!vertex.ok()) co_return vertex.status();
  const ListHead* list = vertex->object ? vertex->v.FindList(range.type) : nullptr;
  PageBuilder page(range);
  size_t blocks = 0;
  for (FatPtr at = list ? list->head : FatPtr{}; !at.is_null() && !page.complete(); ++blocks) {
    if (blocks >= kMaxListBlocks) co_return absl::InternalError("corrupt graph list: a cycle");
    absl::StatusOr<ObjBuf*> object = co_await TxRead(s.tx, at);
    if (!object.ok()) co_return object.status();
    if (absl::Status st = page.Add((*object)->data(), &at); !st.ok()) co_return st;
  }
  co_return page.Take();
}

Task<absl::StatusOr<ListSnapshot>> ReadListTx(TxScope& s, int64_t id1, int64_t type) {
  ListSnapshot snapshot;
  absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
  if (!vertex.ok()) co_return vertex.status();
  const ListHead* list = vertex->object ? vertex->v.FindList(type) : nullptr;
  if (list == nullptr) co_return snapshot;
  snapshot.count = list->count;
  absl::StatusOr<ListEdit> edit = co_await ListEdit::Read(s, list->head);
  if (!edit.ok()) co_return edit.status();
  absl::StatusOr<std::vector<Link>> links = edit->AllLinks(id1, type);
  if (!links.ok()) co_return links.status();
  snapshot.links = std::move(*links);
  snapshot.indexed = list->indexed();
  if (snapshot.indexed) snapshot.index_check = co_await CheckListIndex(s.tx, *list, snapshot.links);
  co_return snapshot;
}

}  // namespace farm::graph
