// The graph's object formats: every encoding decodes to what was encoded, an encoder
// never writes past its object (it refuses what does not fit), and decoders refuse
// malformed bytes.
#include "graph/layout.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "graph/btree.h"
#include "gtest/gtest.h"

namespace farm::graph {
namespace {

Vertex MakeVertex(size_t data, size_t lists) {
  Vertex v;
  v.has_node = true;
  v.node_type = 7;
  v.node_time = 9;
  v.node_version = 11;
  v.inline_data = std::string(data, 'd');
  v.data_bytes = static_cast<uint32_t>(data);
  for (size_t i = 0; i < lists; ++i) {
    ListHead l{static_cast<int64_t>(100 + i), i, FatPtr{Addr(5, 64 * i + 64), 4096, 3}, FatPtr{Addr(6, 64), 4096, 4}, 0};
    l.changes = 1000 + i;
    l.blocks = static_cast<uint32_t>(7 + i);
    if (i % 2 == 1) {
      l.by_id2 = FatPtr{Addr(7, 128), 2048, 1};
      l.by_key = FatPtr{Addr(7, 4096), 2048, 2};
    }
    v.lists.push_back(l);
  }
  return v;
}

TEST(GraphLayoutTest, VerticesRoundTripOrAreRefusedAtEveryObjectSize) {
  for (size_t data : {0, 1, 100, 170, 224, 225, 2048}) {
    for (size_t lists : {0, 1, 2, 3}) {
      const Vertex v = MakeVertex(data, lists);
      for (uint32_t size = 0; size <= 2400; size += 8) {
        // A guard past the object: the encoder must not touch it.
        std::vector<char> object(size + 64, '\x5a');
        const bool fits = EncodeVertex(v, std::span<char>(object.data(), size));
        for (size_t i = size; i < object.size(); ++i) ASSERT_EQ(object[i], '\x5a') << "wrote past " << size;
        EXPECT_EQ(fits, size >= v.EncodedBytes(static_cast<uint32_t>(lists))) << data << " " << lists << " " << size;
        if (!fits) continue;
        absl::StatusOr<Vertex> back = DecodeVertex(std::span<const char>(object.data(), size));
        ASSERT_TRUE(back.ok()) << back.status() << " data " << data << " lists " << lists << " size " << size;
        EXPECT_EQ(back->inline_data, v.inline_data);
        ASSERT_EQ(back->lists.size(), lists);
        for (size_t i = 0; i < lists; ++i) {
          EXPECT_EQ(back->lists[i].type, v.lists[i].type);
          EXPECT_EQ(back->lists[i].head, v.lists[i].head);
          EXPECT_EQ(back->lists[i].tail, v.lists[i].tail);
          EXPECT_EQ(back->lists[i].changes, v.lists[i].changes);
          EXPECT_EQ(back->lists[i].blocks, v.lists[i].blocks);
          EXPECT_EQ(back->lists[i].by_id2, v.lists[i].by_id2);
          EXPECT_EQ(back->lists[i].by_key, v.lists[i].by_key);
        }
      }
      // What the allocator is asked for always fits.
      std::vector<char> object(VertexAllocBytes(v));
      EXPECT_TRUE(EncodeVertex(v, std::span<char>(object.data(), object.size())));
    }
  }
}

// Vertices written by format version 1 (56-byte list heads, no indexes) still read.
TEST(GraphLayoutTest, VersionOneVerticesStillDecode) {
  std::vector<char> v1(kVertexHeaderBytes + 2 * kListHeadBytesV1 + 3, '\0');
  v1[0] = 'V';
  v1[1] = 1;
  v1[2] = 1;  // has a node
  v1[3] = 1;  // one list
  v1[4] = 3;  // data bytes
  v1[25] = 2; // room for two lists
  char* head = v1.data() + kVertexHeaderBytes;
  head[0] = 42;  // type
  head[8] = 5;   // count
  std::memcpy(v1.data() + kVertexHeaderBytes + 2 * kListHeadBytesV1, "abc", 3);
  absl::StatusOr<Vertex> v = DecodeVertex(v1);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->lists.size(), 1u);
  EXPECT_EQ(v->lists[0].type, 42);
  EXPECT_EQ(v->lists[0].count, 5u);
  EXPECT_FALSE(v->lists[0].indexed());
  EXPECT_EQ(v->inline_data, "abc");
  v1[1] = 3;
  EXPECT_FALSE(DecodeVertex(v1).ok()) << "an unknown format version";
}

TEST(GraphLayoutTest, TreeNodesRoundTripAndMalformedBytesAreRefused) {
  std::vector<TreeEntry> entries;
  for (int64_t i = 0; i < 5; ++i) entries.push_back(TreeEntry{TreeKey{-i, 10 * i}, TreeValue{uint64_t(i), uint64_t(i) << 40}});
  std::sort(entries.begin(), entries.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.key < b.key; });
  std::vector<char> node(kTreeHeaderBytes + 5 * 32);
  ASSERT_TRUE(EncodeTreeNode(0, 16, 16, 5, 3, entries, node));
  uint8_t level, kb, vb;
  uint16_t leaf_cap, inner_cap;
  std::vector<TreeEntry> back;
  ASSERT_TRUE(DecodeTreeNode(node, &level, &kb, &vb, &leaf_cap, &inner_cap, &back).ok());
  ASSERT_EQ(back.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(back[i].key == entries[i].key && back[i].value == entries[i].value);
  EXPECT_FALSE(EncodeTreeNode(0, 16, 16, 5, 3, entries, std::span<char>(node.data(), node.size() - 1)));
  // Truncated, wrong tag or version, bad widths, keys out of order: refused.
  EXPECT_FALSE(DecodeTreeNode(std::span<const char>(node.data(), node.size() - 1), &level, &kb, &vb, &leaf_cap,
                              &inner_cap, &back).ok());
  for (size_t at : {0, 1, 3, 4}) {
    std::vector<char> bad = node;
    bad[at] = 9;
    EXPECT_FALSE(DecodeTreeNode(bad, &level, &kb, &vb, &leaf_cap, &inner_cap, &back).ok()) << "byte " << at;
  }
  std::vector<char> unordered = node;
  std::swap_ranges(unordered.begin() + kTreeHeaderBytes, unordered.begin() + kTreeHeaderBytes + 32,
                   unordered.begin() + kTreeHeaderBytes + 32);
  EXPECT_FALSE(DecodeTreeNode(unordered, &level, &kb, &vb, &leaf_cap, &inner_cap, &back).ok());
}

TEST(GraphLayoutTest, BlocksRoundTripAndMalformedBytesAreRefused) {
  Block b;
  b.next = FatPtr{Addr(3, 128), 4096, 2};
  for (int i = 0; i < 50; ++i) {
    b.edges.push_back(Edge{i, 1000 - i, i, i % 3 ? Visibility::kVisible : Visibility::kHidden, std::string(i % 11, 'e')});
  }
  std::vector<char> object(b.EncodedBytes());
  ASSERT_TRUE(EncodeBlock(b, std::span<char>(object.data(), object.size())));
  ASSERT_FALSE(EncodeBlock(b, std::span<char>(object.data(), object.size() - 1)));
  absl::StatusOr<Block> back = DecodeOwnedBlock(std::span<const char>(object.data(), object.size()));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->edges.size(), b.edges.size());
  EXPECT_EQ(back->next, b.next);
  for (size_t i = 0; i < b.edges.size(); ++i) {
    EXPECT_EQ(back->edges[i].id2, b.edges[i].id2);
    EXPECT_EQ(back->edges[i].data, b.edges[i].data);
    EXPECT_EQ(back->edges[i].visibility, b.edges[i].visibility);
  }
  // Every truncation is refused, never read past.
  for (size_t n = 0; n < object.size(); ++n) {
    EXPECT_FALSE(DecodeOwnedBlock(std::span<const char>(object.data(), n)).ok()) << n;
  }
  std::vector<char> bad = object;
  bad[0] = 'V';
  EXPECT_FALSE(DecodeOwnedBlock(std::span<const char>(bad.data(), bad.size())).ok());
  bad = object;
  bad[1] = 9;  // another format version
  EXPECT_FALSE(DecodeOwnedBlock(std::span<const char>(bad.data(), bad.size())).ok());
  EXPECT_FALSE(DecodeVertex(std::span<const char>(object.data(), object.size())).ok());
}

}  // namespace
}  // namespace farm::graph
