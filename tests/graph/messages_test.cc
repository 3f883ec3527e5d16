// The graph's shipped messages (graph/messages.h): the bulk writes' requests and
// replies decode to what was encoded, and malformed ones are refused.
#include "graph/messages.h"

#include <string>
#include <vector>

#include "graph/layout.h"
#include "gtest/gtest.h"

namespace farm::graph {
namespace {

ShipRequest PutNodes() {
  ShipRequest r;
  r.op = ShipOp::kPutNodes;
  r.id1 = 17;
  r.nodes.push_back(Node{17, 2048, 1, 100, "inline data"});
  r.nodes.push_back(Node{19, 7, -3, 200, std::string(kChunkDataBytes + 5, 'c')});
  r.nodes.push_back(Node{23, 2048, 1, 300, ""});
  r.chunks = {{}, {FatPtr{Addr(3, 64), 100, 1}, FatPtr{Addr(3, 4096), 10, 2}}, {}};
  return r;
}

TEST(GraphMessagesTest, PutNodesRoundTripsWithChunksAsPointers) {
  const ShipRequest r = PutNodes();
  absl::StatusOr<ShipRequest> d = DecodeShipRequest(EncodeShipRequest(r));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->op, ShipOp::kPutNodes);
  EXPECT_EQ(d->id1, 17);
  ASSERT_EQ(d->nodes.size(), 3u);
  EXPECT_EQ(d->nodes[0], r.nodes[0]);
  EXPECT_EQ(d->nodes[2], r.nodes[2]);
  // Chunked data travels as its pointers: the node keeps its size, not its bytes.
  EXPECT_EQ(d->nodes[1].id, 19);
  EXPECT_EQ(d->nodes[1].version, -3);
  EXPECT_EQ(d->nodes[1].data.size(), r.nodes[1].data.size());
  EXPECT_EQ(d->chunks, r.chunks);
  EXPECT_EQ(ShippedNodeBytes(r.nodes[0], 0) + ShippedNodeBytes(r.nodes[1], 2) + ShippedNodeBytes(r.nodes[2], 0) + 4,
            EncodeShipRequest(r).size() - 18);
}

TEST(GraphMessagesTest, MalformedBulkRequestsAreRefused) {
  const std::string good = EncodeShipRequest(PutNodes());
  for (size_t cut = 18; cut < good.size(); cut += 7) {
    EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(good.substr(0, cut)).status())) << cut;
  }
  // Inline data over kMaxInlineNodeData, and chunks that do not match the data's size.
  ShipRequest big = PutNodes();
  big.chunks[0] = {};
  big.nodes[0].data = std::string(kMaxInlineNodeData + 1, 'b');
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(EncodeShipRequest(big)).status()));
  ShipRequest wrong = PutNodes();
  wrong.chunks[1].pop_back();
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(EncodeShipRequest(wrong)).status()));
  std::string bytes = EncodeShipRequest(PutNodes());
  bytes.push_back(0);  // a trailing byte
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(bytes).status()));
}

}  // namespace
}  // namespace farm::graph
