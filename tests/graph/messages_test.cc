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

TEST(GraphMessagesTest, LoadListsRoundTrip) {
  ShipRequest r;
  r.op = ShipOp::kLoadLists;
  r.id1 = 5;
  r.token = 0xfeed;
  r.lists.push_back(LinkList{5, 123, {Link{5, 123, 6, Visibility::kVisible, 0, 99, "x"},
                                      Link{5, 123, 7, Visibility::kHidden, 2, 98, std::string(255, 'y')}}});
  r.lists.push_back(LinkList{8, 124, {}});
  const std::string bytes = EncodeShipRequest(r);
  EXPECT_EQ(bytes.size(), 18 + 12 + ShippedListBytes(r.lists[0]) + ShippedListBytes(r.lists[1]));
  absl::StatusOr<ShipRequest> d = DecodeShipRequest(bytes);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->token, 0xfeedu);
  ASSERT_EQ(d->lists.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(d->lists[i].id1, r.lists[i].id1);
    EXPECT_EQ(d->lists[i].type, r.lists[i].type);
    EXPECT_EQ(d->lists[i].links, r.lists[i].links);
  }
  ShipReply reply;
  reply.op = ShipOp::kLoadLists;
  reply.added = 12345;
  absl::StatusOr<ShipReply> rd = DecodeShipReply(EncodeShipReply(5, 0, reply), 5, 0);
  ASSERT_TRUE(rd.ok()) << rd.status();
  EXPECT_EQ(rd->added, 12345u);
}

TEST(GraphMessagesTest, IndexListRoundTripsAndRefusesABadReply) {
  ShipRequest r;
  r.op = ShipOp::kIndexList;
  r.id1 = 42;
  r.type = 7;
  const std::string bytes = EncodeShipRequest(r);
  EXPECT_EQ(bytes.size(), 18u) << "the header alone";
  absl::StatusOr<ShipRequest> d = DecodeShipRequest(bytes);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->op, ShipOp::kIndexList);
  EXPECT_EQ(d->id1, 42);
  EXPECT_EQ(d->type, 7);
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(bytes + "x").status())) << "a trailing byte";
  ShipReply reply;
  reply.op = ShipOp::kIndexList;
  for (bool indexed : {false, true}) {
    reply.indexed = indexed;
    absl::StatusOr<ShipReply> rd = DecodeShipReply(EncodeShipReply(42, 7, reply), 42, 7);
    ASSERT_TRUE(rd.ok()) << rd.status();
    EXPECT_EQ(rd->indexed, indexed);
  }
  std::string bad = EncodeShipReply(42, 7, reply);
  bad.back() = 2;  // neither 0 nor 1
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipReply(bad, 42, 7).status()));
}

TEST(GraphMessagesTest, NodeIdOperationsRoundTripAndRefuseTruncations) {
  ShipRequest take;
  take.op = ShipOp::kTakeNodeIds;
  take.count = 1024;
  ShipRequest reset;
  reset.op = ShipOp::kResetNodeIds;
  reset.start_id = 10000001;
  for (const ShipRequest& r : {take, reset}) {
    const std::string bytes = EncodeShipRequest(r);
    EXPECT_EQ(bytes.size(), 26u) << "the header and one 8-byte field";
    absl::StatusOr<ShipRequest> d = DecodeShipRequest(bytes);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->op, r.op);
    EXPECT_EQ(d->count, r.count);
    EXPECT_EQ(d->start_id, r.start_id);
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(bytes.substr(0, cut)).status())) << cut;
    }
    EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(bytes + "x").status())) << "a trailing byte";
  }
  ShipReply taken;
  taken.op = ShipOp::kTakeNodeIds;
  taken.first_id = 4242;
  absl::StatusOr<ShipReply> rd = DecodeShipReply(EncodeShipReply(0, 0, taken), 0, 0);
  ASSERT_TRUE(rd.ok()) << rd.status();
  EXPECT_EQ(rd->first_id, 4242);
  taken.first_id = 0;  // ids start at 1
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipReply(EncodeShipReply(0, 0, taken), 0, 0).status()));
  ShipReply reset_reply;
  reset_reply.op = ShipOp::kResetNodeIds;
  EXPECT_TRUE(DecodeShipReply(EncodeShipReply(0, 0, reset_reply), 0, 0).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipReply(EncodeShipReply(0, 0, reset_reply) + "x", 0, 0).status()));
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
  ShipRequest lists;
  lists.op = ShipOp::kLoadLists;
  lists.lists.push_back(LinkList{1, 2, {Link{1, 2, 3, Visibility::kVisible, 0, 4, "d"}}});
  std::string bytes = EncodeShipRequest(lists);
  bytes.back() = 'x';  // still well-formed (data byte): decodes
  EXPECT_TRUE(DecodeShipRequest(bytes).ok());
  bytes.push_back(0);  // a trailing byte
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeShipRequest(bytes).status()));
}

}  // namespace
}  // namespace farm::graph
