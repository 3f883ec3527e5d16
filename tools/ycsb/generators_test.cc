#include "tools/ycsb/generators.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tools/ycsb/random.h"

namespace farm::ycsb {
namespace {

// Draws `n` values and counts them by value.
template <typename Gen>
std::map<int64_t, int64_t> Histogram(Gen& gen, Random64& rng, int n) {
  std::map<int64_t, int64_t> counts;
  for (int i = 0; i < n; ++i) ++counts[gen.Next(rng)];
  return counts;
}

// |observed - expected| within `sigmas` standard deviations of a binomial count.
void ExpectFrequency(int64_t observed, int n, double p, double sigmas = 5) {
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(observed), n * p, sigmas * sd) << "p=" << p;
}

TEST(ZetaTest, IncrementEqualsFreshSum) {
  const double z1000 = Zeta(1000, 0.99);
  EXPECT_NEAR(ZetaIncrement(1000, 5000, 0.99, z1000), Zeta(5000, 0.99), 1e-9);
  EXPECT_DOUBLE_EQ(Zeta(1, 0.99), 1.0);
  EXPECT_DOUBLE_EQ(Zeta(2, 0.5), 1.0 + 1.0 / std::sqrt(2.0));
}

TEST(ZetaTest, FastMatchesExactAndYcsbsConstant) {
  EXPECT_NEAR(ZetaFast(3'000'000, 0.99) / Zeta(3'000'000, 0.99), 1.0, 1e-12);
  EXPECT_NEAR(ZetaFast(3'000'000, 0.5) / Zeta(3'000'000, 0.5), 1.0, 1e-12);
  // YCSB's ScrambledZipfianGenerator.ZETAN, zeta(10^10, 0.99).
  EXPECT_NEAR(ZetaFast(10'000'000'000LL, 0.99), ScrambledZipfianGenerator::kZetan, 1e-6);
}

// P(rank 1) = 1 / zeta(n, theta) and P(rank 2) = 2^-theta / zeta(n, theta) exactly in
// Gray's algorithm. Rank r >= 3 is drawn when n * (eta*u - eta + 1)^(1/(1-theta)) falls
// in [r-1, r), an interval of u computed here in closed form; its width is within 20%
// of Zipf's r^-theta / zeta (Gray's approximation, closest for large r).
TEST(ZipfianTest, TopRanksHaveZipfFrequencies) {
  constexpr int64_t kItems = 10000;
  constexpr double kTheta = 0.99;
  constexpr int kDraws = 1'000'000;
  ZipfianGenerator gen(0, kItems - 1, kTheta);
  const double zeta = Zeta(kItems, kTheta);
  EXPECT_NEAR(gen.zetan(), zeta, 1e-9);
  Random64 rng(7);
  const std::map<int64_t, int64_t> counts = Histogram(gen, rng, kDraws);
  EXPECT_GE(counts.begin()->first, 0);
  EXPECT_LT(counts.rbegin()->first, kItems);
  ExpectFrequency(counts.at(0), kDraws, 1 / zeta);
  ExpectFrequency(counts.at(1), kDraws, std::pow(2.0, -kTheta) / zeta);
  // Rank 1 of 10^4 items at theta 0.99 gets ~10% (the FaRM paper's ~4% is for its much
  // larger key count: 1/zeta falls as n grows).
  EXPECT_NEAR(1 / zeta, 0.1, 0.01);
  const double eta = (1 - std::pow(2.0 / kItems, 1 - kTheta)) / (1 - Zeta(2, kTheta) / zeta);
  const double u_rank3 = (1 + std::pow(0.5, kTheta)) / zeta;  // below: ranks 1 and 2
  auto u_below = [&](double x) {                              // the u for which the draw is < x
    return std::clamp((std::pow(x / kItems, 1 - kTheta) - 1 + eta) / eta, u_rank3, 1.0);
  };
  for (int64_t i = 2; i < 10; ++i) {
    const double p = u_below(static_cast<double>(i + 1)) - u_below(static_cast<double>(i));
    ExpectFrequency(counts.at(i), kDraws, p);
    const double zipf = std::pow(static_cast<double>(i + 1), -kTheta) / zeta;
    EXPECT_NEAR(p / zipf, 1.0, 0.2) << "rank " << i + 1;
  }
}

TEST(ZipfianTest, GrowingItemCountExtendsZetaAndRange) {
  ZipfianGenerator gen(0, 999);
  Random64 rng(3);
  int64_t max_seen = 0;
  for (int i = 0; i < 200000; ++i) max_seen = std::max(max_seen, gen.Next(rng, 2000));
  EXPECT_EQ(gen.items(), 2000);
  EXPECT_NEAR(gen.zetan(), Zeta(2000, ZipfianGenerator::kDefaultTheta), 1e-9);
  EXPECT_GE(max_seen, 1000);  // the new items are drawn
  EXPECT_LT(max_seen, 2000);
}

TEST(ZipfianTest, SmallItemCounts) {
  Random64 rng(5);
  ZipfianGenerator one(7, 7);
  ZipfianGenerator two(0, 1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(one.Next(rng), 7);
    const int64_t v = two.Next(rng);
    EXPECT_TRUE(v == 0 || v == 1);
  }
}

TEST(UniformTest, CoversTheRangeEvenly) {
  UniformLongGenerator gen(5, 14);
  Random64 rng(1);
  const std::map<int64_t, int64_t> counts = Histogram(gen, rng, 100000);
  ASSERT_EQ(counts.size(), 10u);
  EXPECT_EQ(counts.begin()->first, 5);
  EXPECT_EQ(counts.rbegin()->first, 14);
  for (const auto& [value, count] : counts) ExpectFrequency(count, 100000, 0.1);
}

TEST(ScrambledZipfianTest, HitsEveryKeyAndIsSkewed) {
  constexpr int64_t kItems = 100;
  ScrambledZipfianGenerator gen(1000, 1000 + kItems - 1);
  Random64 rng(11);
  const std::map<int64_t, int64_t> counts = Histogram(gen, rng, 200000);
  ASSERT_EQ(counts.size(), static_cast<size_t>(kItems));  // every key, eventually
  EXPECT_EQ(counts.begin()->first, 1000);
  EXPECT_EQ(counts.rbegin()->first, 1000 + kItems - 1);
  int64_t top = 0;
  for (const auto& [value, count] : counts) top = std::max(top, count);
  // Zipfian over 10^10 items: rank 1 alone gets 1/26.47 of the draws.
  EXPECT_GT(top, 200000 / 26.47 * 0.9);
}

TEST(HotspotTest, HotSetGetsItsShare) {
  HotspotGenerator gen(0, 999, 0.2, 0.8);
  Random64 rng(2);
  int hot = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const int64_t v = gen.Next(rng);
    ASSERT_GE(v, 0);
    ASSERT_LE(v, 999);
    if (v < 200) ++hot;
  }
  ExpectFrequency(hot, kDraws, 0.8);
}

TEST(AcknowledgedCounterTest, LastCoversOnlyContiguousAcknowledgements) {
  AcknowledgedCounterGenerator counter(100);
  EXPECT_EQ(counter.Last(), 99);
  std::vector<int64_t> v;
  for (int i = 0; i < 4; ++i) v.push_back(counter.Next());
  EXPECT_EQ(v, (std::vector<int64_t>{100, 101, 102, 103}));
  ASSERT_TRUE(counter.Acknowledge(101).ok());
  ASSERT_TRUE(counter.Acknowledge(103).ok());
  EXPECT_EQ(counter.Last(), 99);  // 100 is outstanding
  ASSERT_TRUE(counter.Acknowledge(100).ok());
  EXPECT_EQ(counter.Last(), 101);
  ASSERT_TRUE(counter.Acknowledge(102).ok());
  EXPECT_EQ(counter.Last(), 103);
}

TEST(AcknowledgedCounterTest, RejectsMoreThanAWindowOutstanding) {
  AcknowledgedCounterGenerator counter(0);
  EXPECT_EQ(counter.Acknowledge(AcknowledgedCounterGenerator::kWindow + 5).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(AcknowledgedCounterTest, ConcurrentInsertersNeverStall) {
  AcknowledgedCounterGenerator counter(0);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < kPerThread; ++i) ASSERT_TRUE(counter.Acknowledge(counter.Next()).ok());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter.Last(), int64_t{kThreads} * kPerThread - 1);
}

TEST(SkewedLatestTest, FavoursTheLatestInserts) {
  constexpr int64_t kRecords = 1000;
  AcknowledgedCounterGenerator inserts(kRecords);
  SkewedLatestGenerator gen(inserts, 0, ZipfianGenerator(0, kRecords - 1));
  Random64 rng(4);
  auto top_item = [&] {
    const std::map<int64_t, int64_t> counts = Histogram(gen, rng, 50000);
    EXPECT_GE(counts.begin()->first, 0);
    EXPECT_LE(counts.rbegin()->first, inserts.Last());
    return std::max_element(counts.begin(), counts.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; })
        ->first;
  };
  EXPECT_EQ(top_item(), kRecords - 1);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(inserts.Acknowledge(inserts.Next()).ok());
  EXPECT_EQ(top_item(), kRecords + 9);  // the newest record is now the most popular
}

TEST(DiscreteTest, ProportionsHold) {
  DiscreteGenerator<char> gen;
  gen.Add('a', 0.5);
  gen.Add('b', 0.3);
  gen.Add('z', 0.0);  // never
  gen.Add('c', 0.2);
  Random64 rng(9);
  std::map<char, int64_t> counts;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) ++counts[gen.Next(rng)];
  EXPECT_EQ(counts.count('z'), 0u);
  ExpectFrequency(counts['a'], kDraws, 0.5);
  ExpectFrequency(counts['b'], kDraws, 0.3);
  ExpectFrequency(counts['c'], kDraws, 0.2);
}

TEST(RandomTest, SameSeedSameSequence) {
  Random64 a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(FnvHash64Test, IsFnv1aOverTheEightBytesLowFirst) {
  // FNV-1a 64 of the little-endian bytes, computed independently. (YCSB's Java then
  // takes Math.abs of the signed value: these three have the top bit set.)
  EXPECT_EQ(FnvHash64(0), 0xa8c7f832281a39c5ULL);
  EXPECT_EQ(FnvHash64(1), 0x89cd31291d2aefa4ULL);
  EXPECT_EQ(FnvHash64(12345), 0xe71eb185e2edcc4cULL);
}

}  // namespace
}  // namespace farm::ycsb
