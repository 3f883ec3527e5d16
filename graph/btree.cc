#include "graph/btree.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "farm/api/wire.h"

namespace farm::graph {
namespace {

constexpr uint8_t kTreeTag = 'T';
constexpr uint8_t kTreeVersion = 1;
constexpr uint8_t kChildBytes = 16;
// Deeper than this is taken for a cycle (a corrupt tree): 2^32 entries need far fewer.
constexpr size_t kMaxLevels = 16;

bool ValidWidth(uint8_t bytes) { return bytes == 8 || bytes == 16; }

uint16_t Fit(uint32_t entry_bytes, uint16_t max_entries) {
  const uint32_t fit = (kTreeNodeBytes - kTreeHeaderBytes) / entry_bytes;
  return static_cast<uint16_t>(max_entries != 0 ? std::min<uint32_t>(fit, max_entries) : fit);
}

// The first entry whose key is >= key.
size_t LowerBound(const std::vector<TreeEntry>& entries, TreeKey key) {
  return static_cast<size_t>(std::lower_bound(entries.begin(), entries.end(), key,
                                              [](const TreeEntry& e, TreeKey k) { return e.key < k; }) -
                             entries.begin());
}

// The child an internal node sends `key` to (invariant 1).
size_t ChildFor(const std::vector<TreeEntry>& entries, TreeKey key) {
  return std::min(LowerBound(entries, key), entries.size() - 1);
}

}  // namespace

uint16_t TreeShape::leaf_capacity() const { return Fit(key_bytes + value_bytes, max_entries); }
uint16_t TreeShape::internal_capacity() const {
  // At least 3 children, so that a split leaves two non-trivial halves.
  return std::max<uint16_t>(3, Fit(key_bytes + kChildBytes, max_entries));
}
uint32_t TreeShape::node_bytes() const {
  return kTreeHeaderBytes + std::max<uint32_t>(leaf_capacity() * (key_bytes + value_bytes),
                                               internal_capacity() * (key_bytes + kChildBytes));
}

absl::Status DecodeTreeNode(std::span<const char> bytes, uint8_t* level, uint8_t* key_bytes, uint8_t* value_bytes,
                            uint16_t* leaf_capacity, uint16_t* internal_capacity, std::vector<TreeEntry>* entries) {
  if (bytes.size() < kTreeHeaderBytes) return absl::InternalError("a graph tree node is shorter than its header");
  const char* p = bytes.data();
  if (static_cast<uint8_t>(p[0]) != kTreeTag) return absl::InternalError("a graph tree node has a wrong tag");
  if (static_cast<uint8_t>(p[1]) != kTreeVersion) {
    return absl::InternalError(absl::StrCat("a graph tree node has format version ", static_cast<int>(p[1])));
  }
  *level = static_cast<uint8_t>(p[2]);
  *key_bytes = static_cast<uint8_t>(p[3]);
  *value_bytes = static_cast<uint8_t>(p[4]);
  const uint16_t count = LoadLe<uint16_t>(p + 6);
  *leaf_capacity = LoadLe<uint16_t>(p + 8);
  *internal_capacity = LoadLe<uint16_t>(p + 10);
  if (!ValidWidth(*key_bytes) || !ValidWidth(*value_bytes) || *level >= kMaxLevels) {
    return absl::InternalError("a graph tree node has a bad header");
  }
  const uint32_t entry_bytes = *key_bytes + (*level == 0 ? *value_bytes : kChildBytes);
  if (kTreeHeaderBytes + uint64_t{count} * entry_bytes > bytes.size() || *leaf_capacity == 0 ||
      *internal_capacity < 3) {
    return absl::InternalError("a graph tree node's entries run past its end");
  }
  entries->clear();
  entries->reserve(count);
  const char* at = p + kTreeHeaderBytes;
  for (uint16_t i = 0; i < count; ++i) {
    TreeEntry e;
    if (*key_bytes == 16) {
      e.key.hi = LoadLe<int64_t>(at);
      at += 8;
    }
    e.key.lo = LoadLe<int64_t>(at);
    at += 8;
    e.value.a = LoadLe<uint64_t>(at);
    at += 8;
    if (*level > 0 || *value_bytes == 16) {
      e.value.b = LoadLe<uint64_t>(at);
      at += 8;
    }
    if (!entries->empty() && !(entries->back().key < e.key)) {
      return absl::InternalError("a graph tree node's keys are out of order");
    }
    entries->push_back(e);
  }
  return absl::OkStatus();
}

bool EncodeTreeNode(uint8_t level, uint8_t key_bytes, uint8_t value_bytes, uint16_t leaf_capacity,
                    uint16_t internal_capacity, const std::vector<TreeEntry>& entries, std::span<char> out) {
  const uint32_t entry_bytes = key_bytes + (level == 0 ? value_bytes : kChildBytes);
  if (kTreeHeaderBytes + entries.size() * entry_bytes > out.size() || entries.size() > 0xFFFF) return false;
  std::memset(out.data(), 0, out.size());
  char* p = out.data();
  p[0] = static_cast<char>(kTreeTag);
  p[1] = static_cast<char>(kTreeVersion);
  p[2] = static_cast<char>(level);
  p[3] = static_cast<char>(key_bytes);
  p[4] = static_cast<char>(value_bytes);
  StoreLe<uint16_t>(p + 6, static_cast<uint16_t>(entries.size()));
  StoreLe<uint16_t>(p + 8, leaf_capacity);
  StoreLe<uint16_t>(p + 10, internal_capacity);
  char* at = p + kTreeHeaderBytes;
  for (const TreeEntry& e : entries) {
    if (key_bytes == 16) {
      StoreLe<int64_t>(at, e.key.hi);
      at += 8;
    }
    StoreLe<int64_t>(at, e.key.lo);
    at += 8;
    StoreLe<uint64_t>(at, e.value.a);
    at += 8;
    if (level > 0 || value_bytes == 16) {
      StoreLe<uint64_t>(at, e.value.b);
      at += 8;
    }
  }
  return true;
}

Task<absl::StatusOr<TxTree::Node*>> TxTree::Load(FatPtr ptr, int expected_level) {
  if (auto it = by_address_.find(ptr.addr.raw()); it != by_address_.end()) co_return it->second;
  absl::StatusOr<ObjBuf*> object = co_await TxRead(tx_, ptr);
  if (!object.ok()) co_return object.status();
  Node n;
  n.object = *object;
  if (absl::Status st = DecodeTreeNode((*object)->data(), &n.level, &n.key_bytes, &n.value_bytes, &n.leaf_capacity,
                                       &n.internal_capacity, &n.entries);
      !st.ok()) {
    co_return st;
  }
  if (expected_level >= 0 && n.level != expected_level) {
    co_return absl::InternalError("a graph tree node is not one level below its parent");
  }
  if (expected_level >= 0 && n.entries.empty()) co_return absl::InternalError("a graph tree has an empty inner node");
  nodes_.push_back(std::move(n));
  by_address_[ptr.addr.raw()] = &nodes_.back();
  co_return &nodes_.back();
}

Task<absl::Status> TxTree::Descend(TreeKey key, std::vector<Step>& path) {
  path.clear();
  if (root_ == nullptr) {
    absl::StatusOr<Node*> root = co_await Load(root_ptr_, -1);
    if (!root.ok()) co_return root.status();
    root_ = *root;
  }
  Node* n = root_;
  while (n->level > 0) {
    if (n->entries.empty()) co_return absl::InternalError("a graph tree has an empty inner root");
    const size_t i = ChildFor(n->entries, key);
    path.push_back(Step{n, i});
    absl::StatusOr<Node*> child = co_await Load(n->entries[i].value.ptr(), n->level - 1);
    if (!child.ok()) co_return child.status();
    n = *child;
  }
  path.push_back(Step{n, LowerBound(n->entries, key)});
  co_return absl::OkStatus();
}

Task<absl::StatusOr<TxTree::Node*>> TxTree::NextLeaf(const std::vector<Step>& path) {
  for (size_t d = path.size() - 1; d-- > 0;) {
    const Step& s = path[d];
    if (s.index + 1 >= s.node->entries.size()) continue;
    Node* n = s.node;
    size_t i = s.index + 1;
    while (true) {
      absl::StatusOr<Node*> child = co_await Load(n->entries[i].value.ptr(), n->level - 1);
      if (!child.ok()) co_return child.status();
      n = *child;
      if (n->level == 0) co_return n;
      i = 0;
    }
  }
  co_return nullptr;
}

Task<absl::StatusOr<TxTree::Node*>> TxTree::PreviousLeaf(const std::vector<Step>& path) {
  for (size_t d = path.size() - 1; d-- > 0;) {
    const Step& s = path[d];
    if (s.index == 0) continue;
    Node* n = s.node;
    size_t i = s.index - 1;
    while (true) {
      absl::StatusOr<Node*> child = co_await Load(n->entries[i].value.ptr(), n->level - 1);
      if (!child.ok()) co_return child.status();
      n = *child;
      if (n->level == 0) co_return n;
      i = n->entries.size() - 1;
    }
  }
  co_return nullptr;
}

Task<absl::StatusOr<std::optional<TreeValue>>> TxTree::Find(TreeKey key) {
  std::vector<Step> path;
  if (absl::Status st = co_await Descend(key, path); !st.ok()) co_return st;
  const Step& leaf = path.back();
  if (leaf.index < leaf.node->entries.size() && leaf.node->entries[leaf.index].key == key) {
    co_return leaf.node->entries[leaf.index].value;
  }
  co_return std::nullopt;
}

Task<absl::StatusOr<std::optional<TreeEntry>>> TxTree::Ceil(TreeKey key) {
  std::vector<Step> path;
  if (absl::Status st = co_await Descend(key, path); !st.ok()) co_return st;
  const Step& leaf = path.back();
  if (leaf.index < leaf.node->entries.size()) co_return leaf.node->entries[leaf.index];
  // Every key right of this leaf is above the separator that sent `key` here (1).
  absl::StatusOr<Node*> next = co_await NextLeaf(path);
  if (!next.ok()) co_return next.status();
  if (*next == nullptr || (*next)->entries.empty()) co_return std::nullopt;
  co_return (*next)->entries.front();
}

Task<absl::StatusOr<std::optional<TreeEntry>>> TxTree::Before(TreeKey key) {
  std::vector<Step> path;
  if (absl::Status st = co_await Descend(key, path); !st.ok()) co_return st;
  const Step& leaf = path.back();
  if (leaf.index > 0) co_return leaf.node->entries[leaf.index - 1];
  absl::StatusOr<Node*> previous = co_await PreviousLeaf(path);
  if (!previous.ok()) co_return previous.status();
  if (*previous == nullptr || (*previous)->entries.empty()) co_return std::nullopt;
  co_return (*previous)->entries.back();
}

Task<absl::StatusOr<std::optional<TreeEntry>>> TxTree::Last() {
  std::vector<Step> path;
  if (absl::Status st = co_await Descend(TreeKey{INT64_MAX, INT64_MAX}, path); !st.ok()) co_return st;
  const Node* leaf = path.back().node;
  if (leaf->entries.empty()) co_return std::nullopt;
  co_return leaf->entries.back();
}

Task<absl::Status> TxTree::Put(TreeKey key, TreeValue value) {
  std::vector<Step> path;
  if (absl::Status st = co_await Descend(key, path); !st.ok()) co_return st;
  Step& leaf = path.back();
  std::vector<TreeEntry>& entries = leaf.node->entries;
  if (leaf.index < entries.size() && entries[leaf.index].key == key) {
    entries[leaf.index].value = value;
    MarkDirty(leaf.node);
    co_return absl::OkStatus();
  }
  entries.insert(entries.begin() + static_cast<ptrdiff_t>(leaf.index), TreeEntry{key, value});
  MarkDirty(leaf.node);
  co_return co_await SplitUp(path, path.size() - 1);
}

Task<absl::Status> TxTree::SplitUp(std::vector<Step>& path, size_t depth) {
  Node* n = path[depth].node;
  if (n->entries.size() <= n->capacity()) co_return absl::OkStatus();
  // The upper half goes to a new right sibling; the separator of the lower half is its
  // last key (for an inner node, its last child's separator: that child is no longer
  // last, so it is bounded by it).
  const size_t half = n->entries.size() / 2;
  std::vector<TreeEntry> upper(n->entries.begin() + static_cast<ptrdiff_t>(half), n->entries.end());
  n->entries.resize(half);
  const uint32_t node_bytes = static_cast<uint32_t>(n->object->data().size());
  absl::StatusOr<ObjBuf*> object = co_await TxAlloc(tx_, node_bytes, hint_);
  if (!object.ok()) co_return object.status();
  nodes_.push_back(Node{*object, n->level, n->key_bytes, n->value_bytes, n->leaf_capacity, n->internal_capacity,
                        std::move(upper), false});
  Node* right = &nodes_.back();
  by_address_[right->ptr().addr.raw()] = right;
  MarkDirty(right);
  MarkDirty(n);
  const TreeKey lower_separator = n->entries.back().key;
  if (depth == 0) {
    // A new root above the two halves.
    absl::StatusOr<ObjBuf*> root_object = co_await TxAlloc(tx_, node_bytes, hint_);
    if (!root_object.ok()) co_return root_object.status();
    std::vector<TreeEntry> children{TreeEntry{lower_separator, TreeValue::Of(n->ptr())},
                                    TreeEntry{right->entries.back().key, TreeValue::Of(right->ptr())}};
    nodes_.push_back(Node{*root_object, static_cast<uint8_t>(n->level + 1), n->key_bytes, n->value_bytes,
                          n->leaf_capacity, n->internal_capacity, std::move(children), false});
    root_ = &nodes_.back();
    by_address_[root_->ptr().addr.raw()] = root_;
    MarkDirty(root_);
    co_return absl::OkStatus();
  }
  Step& parent = path[depth - 1];
  std::vector<TreeEntry>& siblings = parent.node->entries;
  // The right half takes n's separator — or, when n is the last child (whose separator
  // bounds nothing, and keys above it went in), its own largest key, which is above the
  // lower half's: separators stay in order.
  const TreeKey upper_separator = std::max(siblings[parent.index].key, right->entries.back().key);
  siblings[parent.index].key = lower_separator;
  siblings.insert(siblings.begin() + static_cast<ptrdiff_t>(parent.index) + 1,
                  TreeEntry{upper_separator, TreeValue::Of(right->ptr())});
  MarkDirty(parent.node);
  co_return co_await SplitUp(path, depth - 1);
}

Task<absl::StatusOr<bool>> TxTree::Erase(TreeKey key) {
  std::vector<Step> path;
  if (absl::Status st = co_await Descend(key, path); !st.ok()) co_return st;
  Step& leaf = path.back();
  std::vector<TreeEntry>& entries = leaf.node->entries;
  if (leaf.index >= entries.size() || !(entries[leaf.index].key == key)) co_return false;
  entries.erase(entries.begin() + static_cast<ptrdiff_t>(leaf.index));
  MarkDirty(leaf.node);
  if (absl::Status st = RemoveUp(path, path.size() - 1); !st.ok()) co_return st;
  co_return true;
}

absl::Status TxTree::RemoveUp(std::vector<Step>& path, size_t depth) {
  Node* n = path[depth].node;
  if (!n->entries.empty()) return absl::OkStatus();
  if (depth == 0) {
    n->level = 0;  // an empty root is an empty leaf (invariant 2)
    MarkDirty(n);
    return absl::OkStatus();
  }
  // Invariant 2: the empty node leaves its parent; the bounds of the others only widen.
  if (absl::Status st = txFree(tx_, n->ptr()); !st.ok()) return st;
  if (n->dirty) dirty_bytes_ -= n->object->data().size();
  n->dirty = false;
  by_address_.erase(n->ptr().addr.raw());
  Step& parent = path[depth - 1];
  parent.node->entries.erase(parent.node->entries.begin() + static_cast<ptrdiff_t>(parent.index));
  MarkDirty(parent.node);
  return RemoveUp(path, depth - 1);
}

Task<absl::StatusOr<std::vector<TreeEntry>>> TxTree::All() {
  std::vector<TreeEntry> out;
  if (root_ == nullptr) {
    absl::StatusOr<Node*> root = co_await Load(root_ptr_, -1);
    if (!root.ok()) co_return root.status();
    root_ = *root;
  }
  if (absl::Status st = co_await Collect(root_, std::nullopt, std::nullopt, out); !st.ok()) co_return st;
  co_return out;
}

Task<absl::Status> TxTree::Collect(Node* n, std::optional<TreeKey> above, std::optional<TreeKey> at_most,
                                   std::vector<TreeEntry>& out) {
  if (n->level == 0) {
    for (const TreeEntry& e : n->entries) {
      if ((above && !(*above < e.key)) || (at_most && *at_most < e.key)) {
        co_return absl::InternalError("a graph tree key lies outside its separators");
      }
      out.push_back(e);
    }
    co_return absl::OkStatus();
  }
  for (size_t i = 0; i < n->entries.size(); ++i) {
    absl::StatusOr<Node*> child = co_await Load(n->entries[i].value.ptr(), n->level - 1);
    if (!child.ok()) co_return child.status();
    const std::optional<TreeKey> lower = i == 0 ? above : std::optional<TreeKey>(n->entries[i - 1].key);
    const std::optional<TreeKey> upper = i + 1 < n->entries.size() ? std::optional<TreeKey>(n->entries[i].key) : at_most;
    if (absl::Status st = co_await Collect(*child, lower, upper, out); !st.ok()) co_return st;
  }
  co_return absl::OkStatus();
}

Task<absl::Status> TxTree::FreeAll() {
  std::vector<FatPtr> pending{root_ptr_};
  size_t visited = 0;
  while (!pending.empty()) {
    if (++visited > (size_t{1} << 24)) co_return absl::InternalError("a graph tree has a cycle");
    const FatPtr p = pending.back();
    pending.pop_back();
    absl::StatusOr<Node*> n = co_await Load(p, -1);
    if (!n.ok()) co_return n.status();
    if ((*n)->level > 0) {
      for (const TreeEntry& e : (*n)->entries) pending.push_back(e.value.ptr());
    }
    if ((*n)->dirty) dirty_bytes_ -= (*n)->object->data().size();
    (*n)->dirty = false;
    by_address_.erase(p.addr.raw());
    if (absl::Status st = txFree(tx_, p); !st.ok()) co_return st;
  }
  root_ = nullptr;
  root_ptr_ = FatPtr{};
  co_return absl::OkStatus();
}

absl::StatusOr<FatPtr> TxTree::Finish() {
  for (Node& n : nodes_) {
    if (!n.dirty) continue;
    if (!EncodeTreeNode(n.level, n.key_bytes, n.value_bytes, n.leaf_capacity, n.internal_capacity, n.entries,
                        n.object->data())) {
      return absl::InternalError("a graph tree node does not fit its object");
    }
    if (absl::Status st = txWrite(tx_, n.object); !st.ok()) return st;
    n.dirty = false;
  }
  dirty_bytes_ = 0;
  return root_ != nullptr ? root_->ptr() : root_ptr_;
}

void TxTree::MarkDirty(Node* n) {
  if (!n->dirty) dirty_bytes_ += n->object->data().size();
  n->dirty = true;
}

Task<absl::StatusOr<FatPtr>> TxTree::WriteNewNode(Tx& tx, const TreeShape& shape, uint8_t level,
                                                 const std::vector<TreeEntry>& entries, Addr hint) {
  absl::StatusOr<ObjBuf*> object = co_await TxAlloc(tx, shape.node_bytes(), hint);
  if (!object.ok()) co_return object.status();
  if (!EncodeTreeNode(level, shape.key_bytes, shape.value_bytes, shape.leaf_capacity(), shape.internal_capacity(),
                      entries, (*object)->data())) {
    co_return absl::InternalError("a graph tree node does not fit its object");
  }
  if (absl::Status st = txWrite(tx, *object); !st.ok()) co_return st;
  co_return (*object)->ptr();
}

}  // namespace farm::graph
