// The graph's object formats: every encoding decodes to what was encoded, an encoder
// never writes past its object (it refuses what does not fit), and decoders refuse
// malformed bytes.
#include "graph/layout.h"

#include <string>
#include <vector>

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
    v.lists.push_back(ListHead{static_cast<int64_t>(100 + i), i, FatPtr{Addr(5, 64 * i + 64), 4096, 3},
                               FatPtr{Addr(6, 64), 4096, 4}, 0});
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
        }
      }
      // What the allocator is asked for always fits.
      std::vector<char> object(VertexAllocBytes(v));
      EXPECT_TRUE(EncodeVertex(v, std::span<char>(object.data(), object.size())));
    }
  }
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
