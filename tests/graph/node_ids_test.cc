// AddNode's ids from blocks reserved ahead (graph/node_ids.h): one reservation (one
// commit) per kNodeIdBlock ids on the id counter's machine, the ids still sequential;
// a reservation made elsewhere (a machine that held the counter before) or a reset makes
// the block be dropped, so no id is handed out twice and a reset is honoured even when
// it coincides with the block's end; concurrent takes on every thread of every machine
// never overlap.
#include <algorithm>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/api/coro.h"
#include "graph/node_ids.h"
#include "gtest/gtest.h"
#include "tests/graph/graph_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::graph::testing {
namespace {

class NodeIdsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<GraphCluster>> g = GraphCluster::Start(GetParam(), 3, "node_ids_test");
    ASSERT_TRUE(g.ok()) << g.status();
    g_ = std::move(*g);
  }

  int64_t Add(NodeId on) {
    absl::StatusOr<int64_t> id = g_->AddNode(on, Node{0, 2048, 1, 1, "n"});
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : -1;
  }

  // n ids from a block of the test's own on node `on`, thread 1: a reservation the
  // cluster's blocks did not make (as by a machine that held the counter before).
  absl::StatusOr<int64_t> TakeElsewhere(NodeId on, NodeIdBlock& block, uint64_t n) {
    return g_->local().Run<absl::StatusOr<int64_t>>(on, 1, [&block, n](GraphClient& c, auto done) {
      Spawn(block.Take(c.ctx(), c.index_client(), n), std::move(done));
    });
  }

  // n ids as AddNodes takes them: kTakeNodeIds shipped to the counter's machine.
  absl::StatusOr<int64_t> TakeShipped(NodeId on, size_t t, uint64_t n) {
    return g_->local().Run<absl::StatusOr<int64_t>>(on, t, [n](GraphClient& c, auto done) {
      ShipRequest r;
      r.op = ShipOp::kTakeNodeIds;
      r.count = n;
      c.Ship(std::move(r), [done = std::move(done)](absl::StatusOr<ShipReply> reply) mutable {
        if (!reply.ok()) return done(reply.status());
        done(reply->first_id);
      });
    });
  }

  std::unique_ptr<GraphCluster> g_;
};

TEST_P(NodeIdsTest, AddNodesShareOneReservationPerBlock) {
  const int64_t n = 2 * static_cast<int64_t>(kNodeIdBlock) + 10;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(Add(1 + i % 3), i + 1);
  const NodeIdStats s = g_->TotalNodeIdStats();
  EXPECT_EQ(s.takes, static_cast<uint64_t>(n));
  // Ids 1..65, 66..130, 131..195: each reservation asks for one id and a block beyond.
  EXPECT_EQ(s.reservations, 3u);
  EXPECT_EQ(s.dropped, 0u);
  // A load's batch larger than what is left extends the block: no gap.
  std::vector<Node> batch(100, Node{0, 2048, 1, 1, "b"});
  absl::StatusOr<int64_t> first = g_->AddNodes(2, batch);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, n + 1);
  EXPECT_EQ(Add(3), n + 101);
  EXPECT_EQ(g_->TotalNodeIdStats().dropped, 0u);
}

TEST_P(NodeIdsTest, AReservationElsewhereDropsTheBlockAndNoIdRepeats) {
  ASSERT_EQ(Add(1), 1);  // the counter's block: ids 1..65
  NodeIdBlock elsewhere;
  absl::StatusOr<int64_t> other = TakeElsewhere(2, elsewhere, 10);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, 66);  // 66..75 handed out there, 76..139 kept there
  // The counter no longer ends the cluster's block: it is dropped, ids go on after 139.
  EXPECT_EQ(Add(3), 140);
  EXPECT_EQ(Add(2), 141);
  EXPECT_EQ(g_->TotalNodeIdStats().dropped, 1u);
  // And the other block, now behind the counter, is dropped in turn.
  other = TakeElsewhere(1, elsewhere, 1);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, 205);  // the cluster's block reserved 140..204
  EXPECT_EQ(elsewhere.stats().dropped, 1u);
  // ... and the cluster's once more: its ids go on after the other's 205..269.
  EXPECT_EQ(Add(1), 270);
  EXPECT_EQ(g_->TotalNodeIdStats().dropped, 2u);
}

TEST_P(NodeIdsTest, AResetIsHonouredEvenWhenItCoincidesWithTheBlocksEnd) {
  ASSERT_EQ(Add(1), 1);  // block 1..65: the counter says 65
  // Reset to 66 sets the counter to 65 again: only the dropped block tells them apart.
  ASSERT_TRUE(g_->ResetNodeIds(3, 66).ok());
  EXPECT_EQ(Add(2), 66);
  ASSERT_TRUE(g_->ResetNodeIds(2, 10).ok());
  EXPECT_EQ(Add(3), 10);
  absl::StatusOr<int64_t> batch = g_->AddNodes(1, {Node{0, 7, 1, 1, "p"}, Node{0, 7, 1, 1, "q"}});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(*batch, 11);
  EXPECT_EQ((*g_->GetNode(2, 12, 7))->data, "q");
}

// What a restart of the counter's machine does to its block: the ids it had not handed
// out are lost (a gap, as an auto-increment's), and none is handed out twice.
TEST_P(NodeIdsTest, AForgottenBlockLeavesAGapNeverARepeat) {
  ASSERT_EQ(Add(1), 1);
  ASSERT_EQ(Add(2), 2);
  for (NodeId on = 1; on <= 3; ++on) g_->local().graph(on).node_ids().Forget();
  EXPECT_EQ(Add(3), 66);
  EXPECT_EQ(Add(1), 67);
}

TEST_P(NodeIdsTest, CountsOutsideOneToTheLimitAreRefused) {
  for (uint64_t bad : {uint64_t{0}, kMaxIdsPerTake + 1}) {
    absl::StatusOr<int64_t> r = TakeShipped(1, 0, bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad << ": " << r.status();
  }
  EXPECT_EQ(Add(1), 1);  // nothing was reserved
}

// Every thread of every machine takes ids at once (sizes up to a block, so reservations
// often overlap: Takes wait for one another), while a block elsewhere reserves too:
// every range is disjoint from every other, and each thread's ranges increase.
TEST_P(NodeIdsTest, ConcurrentTakesNeverOverlap) {
  struct Range {
    int64_t first;
    uint64_t n;
  };
  constexpr int kRounds = 8;
  constexpr int kTakesPerThread = 60;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    ASSERT_TRUE(g_->ResetNodeIds(1 + round % 3, 1).ok());
    std::vector<std::vector<Range>> ranges(7);
    std::vector<std::thread> takers;
    NodeIdBlock elsewhere;
    for (int w = 0; w < 7; ++w) {
      takers.emplace_back([&, w] {
        std::mt19937_64 rng(round * 100 + w);
        for (int i = 0; i < kTakesPerThread; ++i) {
          const uint64_t n = 1 + rng() % kNodeIdBlock;
          absl::StatusOr<int64_t> first =
              w < 6 ? TakeShipped(1 + w / 2, w % 2, n) : TakeElsewhere(1 + i % 3, elsewhere, n);
          ASSERT_TRUE(first.ok()) << first.status();
          ranges[w].push_back(Range{*first, n});
        }
      });
    }
    for (std::thread& t : takers) t.join();
    std::vector<Range> all;
    for (const std::vector<Range>& mine : ranges) {
      for (size_t i = 1; i < mine.size(); ++i) {
        EXPECT_GE(mine[i].first, mine[i - 1].first + static_cast<int64_t>(mine[i - 1].n)) << "one taker's ids increase";
      }
      all.insert(all.end(), mine.begin(), mine.end());
    }
    ASSERT_EQ(all.size(), 7u * kTakesPerThread);
    std::sort(all.begin(), all.end(), [](const Range& a, const Range& b) { return a.first < b.first; });
    EXPECT_GE(all[0].first, 1);
    for (size_t i = 1; i < all.size(); ++i) {
      ASSERT_GE(all[i].first, all[i - 1].first + static_cast<int64_t>(all[i - 1].n))
          << "ranges at " << all[i - 1].first << " (" << all[i - 1].n << " ids) and " << all[i].first << " overlap";
    }
  }
  const NodeIdStats s = g_->TotalNodeIdStats();
  std::cout << "takes " << s.takes << ", reservations " << s.reservations << ", dropped " << s.dropped << ", waits "
            << s.waits << "\n";
  EXPECT_EQ(s.takes, static_cast<uint64_t>(kRounds) * 6 * kTakesPerThread);
}

INSTANTIATE_TEST_SUITE_P(Backends, NodeIdsTest, ::testing::ValuesIn(farm::testing::TestBackends()));

}  // namespace
}  // namespace farm::graph::testing
