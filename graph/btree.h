// TxTree: a B+tree of fixed-size entries in FaRM objects, read and changed inside one
// transaction. The indexes of long lists (list_index.h) are two of them.
//
//   node  u8 'T', u8 version, u8 level (0: a leaf), u8 key bytes (8 or 16), u8 leaf
//         value bytes (8 or 16), u8 0, u16 entries, u16 leaf capacity, u16 internal
//         capacity; then the entries in ascending key order, each the key (i64 hi when
//         16 bytes, then i64 lo) and the value (u64 a, then u64 b when 16 bytes). An
//         internal node's values are child pointers (FatPtr: u64 address, u32 size,
//         u32 incarnation), always 16 bytes. Every node of a tree is an object of the
//         shape's node_bytes() (at most kTreeNodeBytes).
//
// Invariants:
//   1. an internal node's entry i (sep_i, child_i): every key under child_i is <= sep_i,
//      and > sep_(i-1) when i > 0; the last child has no upper bound. Lookups go to the
//      first child whose separator is >= the key, else the last (whose separator only
//      keeps the entries in order). Separators are set when a node splits and never
//      change after (a removal keeps the bounds);
//   2. only the root may be empty; a node that empties is removed from its parent and
//      freed (an internal root that empties becomes an empty leaf);
//   3. the levels of a parent and child differ by one; all leaves are at level 0.
//
// Costs: a lookup reads one node per level; a change writes its leaf, and on a split a
// new node and the parent (recursively). Capacities are those of the node that splits,
// so a tree made with small nodes (tests) keeps them.
//
// Errors: a malformed node is Internal (naming the defect); the transaction's own errors
// (Aborted, FailedPrecondition for a freed object) pass through.
#ifndef FARM_GRAPH_BTREE_H_
#define FARM_GRAPH_BTREE_H_

#include <compare>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"

namespace farm::graph {

inline constexpr uint32_t kTreeNodeBytes = 2048;
inline constexpr uint32_t kTreeHeaderBytes = 12;

struct TreeKey {
  int64_t hi = 0;
  int64_t lo = 0;
  friend auto operator<=>(const TreeKey&, const TreeKey&) = default;
};
struct TreeValue {
  uint64_t a = 0;
  uint64_t b = 0;
  friend bool operator==(const TreeValue&, const TreeValue&) = default;

  static TreeValue Of(FatPtr p) {
    return TreeValue{p.addr.raw(), uint64_t{p.size} | uint64_t{p.incarnation} << 32};
  }
  FatPtr ptr() const {
    return FatPtr{Addr::FromRaw(a), static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32)};
  }
};
struct TreeEntry {
  TreeKey key;
  TreeValue value;
};

// What a tree holds: key and leaf value widths (8: only lo / a are kept), and at most
// how many entries a node takes (0: as many as fit kTreeNodeBytes; tests set a few).
struct TreeShape {
  uint8_t key_bytes = 16;
  uint8_t value_bytes = 16;
  uint16_t max_entries = 0;

  uint16_t leaf_capacity() const;
  uint16_t internal_capacity() const;
  // The object a node takes: room for either capacity.
  uint32_t node_bytes() const;
};

class TxTree {
 public:
  // The tree whose root is `root` (a node object); new nodes are allocated near `hint`.
  TxTree(Tx& tx, FatPtr root, Addr hint) : tx_(tx), root_ptr_(root), hint_(hint) {}
  TxTree(TxTree&&) = default;

  Task<absl::StatusOr<std::optional<TreeValue>>> Find(TreeKey key);
  // The entry with the smallest key >= key; the one with the largest key < key; the
  // last one.
  Task<absl::StatusOr<std::optional<TreeEntry>>> Ceil(TreeKey key);
  Task<absl::StatusOr<std::optional<TreeEntry>>> Before(TreeKey key);
  Task<absl::StatusOr<std::optional<TreeEntry>>> Last();
  // Inserts, or overwrites the value of an existing key.
  Task<absl::Status> Put(TreeKey key, TreeValue value);
  // true when the key was there.
  Task<absl::StatusOr<bool>> Erase(TreeKey key);
  // Every entry in key order, checking invariants 1 and 3 on the way (reads every
  // node: for checks).
  Task<absl::StatusOr<std::vector<TreeEntry>>> All();
  // Frees every node (reads them all: for small trees, and trees being abandoned).
  Task<absl::Status> FreeAll();

  // Writes the changed nodes into the transaction; the root (a new one after a root
  // split).
  absl::StatusOr<FatPtr> Finish();
  // Bytes of nodes this transaction will write (for the commit record's budget).
  uint64_t dirty_bytes() const { return dirty_bytes_; }
  // Nodes read or made so far.
  size_t nodes_read() const { return nodes_.size(); }

  // A new node object holding `entries` at `level` (a bulk build's step), written in `tx`.
  static Task<absl::StatusOr<FatPtr>> WriteNewNode(Tx& tx, const TreeShape& shape, uint8_t level,
                                                   const std::vector<TreeEntry>& entries, Addr hint);

 private:
  struct Node {
    ObjBuf* object = nullptr;
    uint8_t level = 0;
    uint8_t key_bytes = 16;
    uint8_t value_bytes = 16;
    uint16_t leaf_capacity = 0;
    uint16_t internal_capacity = 0;
    std::vector<TreeEntry> entries;
    bool dirty = false;

    uint16_t capacity() const { return level == 0 ? leaf_capacity : internal_capacity; }
    FatPtr ptr() const { return object->ptr(); }
  };
  struct Step {
    Node* node;
    size_t index;  // of the child taken, or in a leaf the lower bound of the key
  };

  Task<absl::StatusOr<Node*>> Load(FatPtr ptr, int expected_level);
  Task<absl::Status> Descend(TreeKey key, std::vector<Step>& path);
  // From the leaf a path ends in, the first leaf to its right / its left (nullptr: none).
  Task<absl::StatusOr<Node*>> NextLeaf(const std::vector<Step>& path);
  Task<absl::StatusOr<Node*>> PreviousLeaf(const std::vector<Step>& path);
  Task<absl::Status> SplitUp(std::vector<Step>& path, size_t depth);
  absl::Status RemoveUp(std::vector<Step>& path, size_t depth);
  Task<absl::Status> Collect(Node* n, std::optional<TreeKey> above, std::optional<TreeKey> at_most,
                             std::vector<TreeEntry>& out);
  void MarkDirty(Node* n);

  Tx& tx_;
  FatPtr root_ptr_;
  Addr hint_;
  Node* root_ = nullptr;
  std::deque<Node> nodes_;
  absl::flat_hash_map<uint64_t, Node*> by_address_;
  uint64_t dirty_bytes_ = 0;
};

// Node codec (exposed for tests).
absl::Status DecodeTreeNode(std::span<const char> bytes, uint8_t* level, uint8_t* key_bytes, uint8_t* value_bytes,
                            uint16_t* leaf_capacity, uint16_t* internal_capacity, std::vector<TreeEntry>* entries);
bool EncodeTreeNode(uint8_t level, uint8_t key_bytes, uint8_t value_bytes, uint16_t leaf_capacity,
                    uint16_t internal_capacity, const std::vector<TreeEntry>& entries, std::span<char> out);

}  // namespace farm::graph

#endif  // FARM_GRAPH_BTREE_H_
