// Unit tests of the linear-probing layout's pure parts: the read-size model of ADMS'20
// section 3 (Knuth's distribution, E[X(R)], the bandwidth cap, R*), the load estimate,
// the probe map's READ planning across shard boundaries and the table's end, and the
// layout names of kv/table_layouts.h.
#include <cmath>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "kv/layout_spec.h"
#include "kv/linear/probe_map.h"
#include "kv/linear/read_size_model.h"
#include "kv/table_layouts.h"

namespace farm::kv::linear {
namespace {

TEST(ReadSizeModelTest, KnuthsDistributionSumsToOneAndMatchesTheExpectedMissProbeLength) {
  for (double load : {0.25, 0.5, 0.7, 0.9, 0.95}) {
    SCOPED_TRACE(load);
    const uint64_t m = 100000;
    const std::vector<double> p = FirstEmptyDistribution(m, static_cast<uint64_t>(load * m), 1 << 16);
    const double sum = std::accumulate(p.begin(), p.end(), 0.0);
    EXPECT_NEAR(sum, 1.0, 1e-9);
    double mean = 0;  // probes of a miss: slots examined up to and including the empty one
    for (size_t k = 0; k < p.size(); ++k) mean += (k + 1) * p[k];
    const double knuth = (1 + 1 / ((1 - load) * (1 - load))) / 2;
    EXPECT_NEAR(mean, knuth, 0.012 * knuth) << "Knuth: (1 + 1/(1-a)^2)/2";
    EXPECT_NEAR(p[0], 1 - load, 1e-12);
  }
}

TEST(ReadSizeModelTest, ExpectedReadsFallWithTheReadSize) {
  const std::vector<double> c = Cumulative(FirstEmptyDistribution(100000, 90000, 1 << 16));
  EXPECT_NEAR(ExpectedReads(c, 1), 50.5, 1.0);  // R = 1: one READ per probe
  double last = ExpectedReads(c, 1);
  for (uint32_t r : {2u, 4u, 8u, 32u, 128u, 1024u}) {
    const double e = ExpectedReads(c, r);
    EXPECT_LT(e, last) << r;
    EXPECT_GE(e, 1.0) << r;
    last = e;
  }
  EXPECT_LT(ExpectedReads(c, 1024), 1.1);
}

TEST(ReadSizeModelTest, TheBandwidthCapIsThePapers) {
  // Eq. 2 with the paper's constants: 22.70, 9.26 and 5.90 slots for w = 8, 32, 128.
  const ReadCost paper;
  EXPECT_EQ(BandwidthCap(8, paper), 22u);
  EXPECT_EQ(BandwidthCap(32, paper), 9u);
  EXPECT_EQ(BandwidthCap(128, paper), 5u);
}

TEST(ReadSizeModelTest, OptimalReadSizeGrowsWithTheLoadAndRespectsTheCap) {
  ReadSizeOptions unconstrained;
  unconstrained.bandwidth_limit = false;
  ReadSizeOptions capped;
  uint32_t last = 0;
  for (double load : {0.25, 0.5, 0.65, 0.8, 0.9, 0.95}) {
    SCOPED_TRACE(load);
    const std::vector<double> p = FirstEmptyDistribution(1 << 20, static_cast<uint64_t>(load * (1 << 20)), 1 << 14);
    const uint32_t free_r = OptimalReadSize(p, 8, 4096, unconstrained);
    EXPECT_GE(free_r, last);
    last = free_r;
    EXPECT_EQ(OptimalReadSize(p, 8, 4096, capped), std::min(free_r, BandwidthCap(8, capped.cost)));
  }
  // The paper's Table 1 (w = 8): R grows from a few slots at 0.25 to hundreds at 0.95.
  EXPECT_LE(OptimalReadSize(FirstEmptyDistribution(1 << 20, 1 << 18, 1 << 14), 8, 4096, unconstrained), 10u);
  EXPECT_GE(last, 200u);
}

TEST(ReadSizeModelTest, TheTableAnswersForEveryLoadAndAFixedSizeOverridesIt) {
  ReadSizeOptions model;
  const ReadSizeTable table = ReadSizeTable::Build(40000, 60, 256, model);
  EXPECT_FALSE(table.fixed());
  EXPECT_LE(table.For(0.1), table.For(0.9));
  EXPECT_EQ(table.For(0.9), BandwidthCap(60, model.cost));  // capped at high load
  EXPECT_EQ(table.For(2.0), table.For(0.99));
  ReadSizeOptions fixed;
  fixed.fixed = 8;
  const ReadSizeTable eight = ReadSizeTable::Build(40000, 60, 256, fixed);
  EXPECT_TRUE(eight.fixed());
  EXPECT_EQ(eight.For(0.0), 8u);
  EXPECT_EQ(eight.For(0.95), 8u);
}

TEST(LoadEstimateTest, IsTheMeanOfTheLastWindowOfSamples) {
  LoadEstimate e;
  EXPECT_EQ(e.load(), LoadEstimate::kPrior);
  for (int i = 0; i < LoadEstimate::kWindow; ++i) e.Record(4, 4);
  EXPECT_EQ(e.load(), 1.0);
  for (int i = 0; i < LoadEstimate::kWindow / 2; ++i) e.Record(0, 4);
  EXPECT_NEAR(e.load(), 0.5, 1e-12);
  for (int i = 0; i < LoadEstimate::kWindow; ++i) e.Record(1, 4);
  EXPECT_NEAR(e.load(), 0.25, 1e-12);
}

// Two shards of 3 and 2 groups of 4 slots: slots 0..11 and 12..19.
ProbeMap TwoShards() {
  SlotLayout layout;
  const uint32_t stride = 256;
  std::vector<Shard> shards = {Shard{Addr(7, 4096), 1, stride, 3, 1}, Shard{Addr(9, 0), 1, stride, 2, 2}};
  absl::StatusOr<ProbeMap> map = ProbeMap::Create(layout, shards);
  EXPECT_TRUE(map.ok()) << map.status();
  return std::move(*map);
}

TEST(ProbeMapTest, SlotsRunAcrossShardsAndAroundTheEnd) {
  const ProbeMap map = TwoShards();
  EXPECT_EQ(map.slots(), 20u);
  EXPECT_EQ(map.max_probe(), 20u);
  EXPECT_EQ(map.GroupOf(11).shard, 0u);
  EXPECT_EQ(map.GroupOf(11).group, 2u);
  EXPECT_EQ(map.GroupOf(12).shard, 1u);
  EXPECT_EQ(map.GroupOf(12).group, 0u);
  EXPECT_EQ(map.Advance(19, 1), 0u);
  EXPECT_EQ(map.Group(GroupRef{1, 1}).addr, Addr(9, 256));
  for (uint64_t h = 0; h < 1000; ++h) EXPECT_LT(map.HomeOf(h * 0x9e3779b97f4a7c15ull), 20u);
}

TEST(ProbeMapTest, ReadsAreSplitAtShardBoundariesAndTheTableEnd) {
  const ProbeMap map = TwoShards();
  std::vector<GroupRun> runs;
  // 6 slots from slot 10: slots 10-11 in shard 0's last group, then 12-15 in shard 1's
  // first (one READ each).
  EXPECT_EQ(map.PlanReads(10, 6, runs), 6u);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].shard, 0u);
  EXPECT_EQ(runs[0].first, 2u);
  EXPECT_EQ(runs[0].count, 1u);
  EXPECT_EQ(runs[1].shard, 1u);
  EXPECT_EQ(runs[1].first, 0u);
  EXPECT_EQ(runs[1].count, 1u);
  // 7 slots from slot 10: one more group of shard 1, in the same READ.
  EXPECT_EQ(map.PlanReads(10, 7, runs), 10u);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].count, 2u);
  // 3 slots from slot 18: the last group, then around to shard 0's first.
  EXPECT_EQ(map.PlanReads(18, 3, runs), 6u);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].shard, 1u);
  EXPECT_EQ(runs[0].first, 1u);
  EXPECT_EQ(runs[1].shard, 0u);
  EXPECT_EQ(runs[1].first, 0u);
  // One slot: one group.
  EXPECT_EQ(map.PlanReads(5, 1, runs), 3u);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].count, 1u);
}

TEST(ProbeMapTest, AReadOfManyGroupsIsSeveralReadsOfAtMostEight) {
  SlotLayout layout;
  layout.slots_per_group = 1;
  absl::StatusOr<ProbeMap> map = ProbeMap::Create(layout, {Shard{Addr(3, 0), 1, 80, 100, 1}});
  ASSERT_TRUE(map.ok());
  std::vector<GroupRun> runs;
  EXPECT_EQ(map->PlanReads(0, 20, runs), 20u);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].count, kMaxGroupsPerRead);
  EXPECT_EQ(runs[1].first, kMaxGroupsPerRead);
  EXPECT_EQ(runs[2].count, 4u);
}

TEST(TableLayoutsTest, NamesAndOptionsAreChecked) {
  EXPECT_TRUE(ValidateLayout("hopscotch").ok());
  EXPECT_TRUE(ValidateLayout("hopscotch:H=4").ok());
  EXPECT_TRUE(ValidateLayout("linear").ok());
  EXPECT_TRUE(ValidateLayout("linear:R=8").ok());
  EXPECT_TRUE(ValidateLayout("linear:bw=off,G=8").ok());
  EXPECT_TRUE(ValidateLayout("chained").ok());
  EXPECT_TRUE(ValidateLayout("chained:S=1,B=4,load=0.5,expand=off").ok());
  EXPECT_TRUE(ValidateLayout("cuckoo").ok());
  EXPECT_TRUE(ValidateLayout("cuckoo:N=2,I=4,D=8").ok());
  for (const char* bad : {"chained:S=0", "chained:S=17", "chained:B=0", "chained:load=0", "chained:expand=maybe",
                          "chained:R=8", "cuckoo:N=4", "cuckoo:N=1", "cuckoo:I=0", "cuckoo:D=0", "cuckoo:R=8"}) {
    const absl::Status s = ValidateLayout(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s;
  }
  for (const char* bad : {"robinhood", "", ":R=8", "linear:R=0", "linear:R", "linear:X=1",
                          "linear:G=0", "linear:bw=maybe", "hopscotch:H=3", "hopscotch:R=8", "linear:R=8,R=9"}) {
    const absl::Status s = ValidateLayout(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s;
  }
  const absl::Status unknown = ValidateLayout("robinhood");
  EXPECT_NE(unknown.message().find("unknown table layout"), absl::string_view::npos) << unknown;
  EXPECT_NE(unknown.message().find("hopscotch, linear, chained, cuckoo"), absl::string_view::npos) << unknown;
}

TEST(TableLayoutsTest, ChainedTakesTheSameNumberOfPairSlotsAsHopscotch) {
  KvTableOptions o;
  o.layout = "chained:S=2";
  o.table.buckets_per_node = 100;  // H = 8: 400 pair slots
  absl::StatusOr<chained::ChainedOptions> c = ChainedOptionsFor(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->buckets_per_node, 200u);
  o.layout = "chained:B=7";
  EXPECT_EQ(ChainedOptionsFor(o)->buckets_per_node, 7u);
}

TEST(TableLayoutsTest, LinearTakesTheSameNumberOfPairSlotsAsHopscotch) {
  KvTableOptions o;
  o.layout = "linear:R=5,G=2,bw=off";
  o.table.buckets_per_node = 1000;  // H = 8: 4 slots a bucket
  absl::StatusOr<LinearOptions> linear = LinearOptionsFor(o);
  ASSERT_TRUE(linear.ok()) << linear.status();
  EXPECT_EQ(linear->slots_per_node, 4000u);
  EXPECT_EQ(linear->read.fixed, 5u);
  EXPECT_FALSE(linear->read.bandwidth_limit);
  EXPECT_EQ(linear->layout.slots_per_group, 2u);
  EXPECT_EQ(linear->layout.inline_key_bytes, 16u);
  EXPECT_EQ(linear->layout.inline_value_bytes, 32u);
}

}  // namespace
}  // namespace farm::kv::linear
