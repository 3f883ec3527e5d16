// The generator against the real LinkBench driver: graph sizes, the fixed-seed
// shufflers and Zipf choices, the request mix, payload sizes.
#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "tools/linkbench/distribution_data.h"
#include "tools/linkbench/id_space.h"
#include "tools/linkbench/java_random.h"
#include "tools/linkbench/loader.h"
#include "tools/linkbench/memory_backend.h"
#include "tools/linkbench/model.h"
#include "tools/linkbench/properties.h"
#include "tools/linkbench/request_phase.h"
#include "tools/linkbench/requester.h"
#include "tools/linkbench/shuffler.h"
#include "tools/linkbench/workload.h"

namespace farm::linkbench {
namespace {

const std::string kConfig = LINKBENCH_CONFIG_DIR;

std::unique_ptr<WorkloadModel> Model(int64_t nodes, const std::string& mix = "linkbench") {
  absl::StatusOr<Properties> props = Properties::Load(kConfig + "/FBWorkload.properties");
  EXPECT_TRUE(props.ok()) << props.status();
  props->Set("maxid1", std::to_string(1 + nodes));
  absl::StatusOr<Workload> w = WorkloadFromProperties(*props);
  EXPECT_TRUE(w.ok()) << w.status();
  if (mix == "tao") ApplyTaoMix(*w);
  absl::StatusOr<DistributionData> data = DistributionData::Load(kConfig + "/Distribution.dat");
  EXPECT_TRUE(data.ok()) << data.status();
  return std::make_unique<WorkloadModel>(*w, *std::move(data));
}

TEST(JavaRandomTest, MatchesJavaUtilRandom) {
  EXPECT_EQ(JavaRandom(42).NextInt(), -1170105035);
  EXPECT_DOUBLE_EQ(JavaRandom(42).NextDouble(), 0.7275636800328681);
  EXPECT_DOUBLE_EQ(JavaRandom(0).NextGaussian(), 0.8025330637390305);
  EXPECT_EQ(JavaRandom(42).NextInt(10), 0);
}

int64_t HubLinks(const WorkloadModel& m) {
  const LinkCounts& c = m.counts();
  return c.ForType(c.HubId(), c.LinkType(0)) + c.ForType(c.HubId(), c.LinkType(1));
}

TEST(GraphSizeTest, TenThousandNodesAsTheRealDriver) {
  auto m = Model(10000);
  EXPECT_EQ(ExpectedLinks(*m), 995140);
  EXPECT_EQ(HubLinks(*m), 961964);  // 961963 total, split 480982 + 480982 by the quirk
  // The hub is the only node with that many; every other node is far smaller.
  int64_t second = 0;
  for (int64_t id = 1; id < 10001; ++id) {
    if (id != m->counts().HubId()) second = std::max(second, m->counts().Total(id));
  }
  EXPECT_LT(second, 20000);
}

TEST(GraphSizeTest, HundredThousandNodesAsTheRealDriver) {
  auto m = Model(100000);
  EXPECT_EQ(ExpectedLinks(*m), 1368899);
  EXPECT_EQ(HubLinks(*m), 961964);
}

TEST(GraphSizeTest, PerTypeSplitQuirk) {
  auto m = Model(10000);
  const LinkCounts& c = m->counts();
  for (int64_t id = 1; id < 2000; ++id) {
    const int64_t total = c.Total(id);
    const int64_t t0 = c.ForType(id, c.LinkType(0)), t1 = c.ForType(id, c.LinkType(1));
    if (total == 0) {
      EXPECT_EQ(t0 + t1, 0);
    } else if (total == 1) {
      EXPECT_EQ(t0, 1);
      EXPECT_EQ(t1, 0);
    } else {
      EXPECT_EQ(t0, total / 2 + 1) << id;
      EXPECT_EQ(t1, total / 2 + (total >= 3 ? 1 : 0)) << id;  // leftover = total - total/2
    }
  }
}

TEST(ShufflerTest, IsABijectionWithItsInverse) {
  for (int64_t n : {1000, 10000, 12345}) {
    InvertibleShuffler s(kNlinksShufflerSeed, kShufflerGroups, n);
    std::vector<bool> seen(n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = s.Permute(i);
      ASSERT_GE(p, 0);
      ASSERT_LT(p, n);
      EXPECT_FALSE(seen[p]);
      seen[p] = true;
      EXPECT_EQ(s.InvertPermute(p), i);
    }
  }
}

TEST(ShufflerTest, FixedSeedsGiveFixedPermutations) {
  InvertibleShuffler a(kUncorrShufflerSeed, kShufflerGroups, 10000);
  InvertibleShuffler b(kUncorrShufflerSeed, kShufflerGroups, 10000);
  InvertibleShuffler c(kNodeShufflerSeed, kShufflerGroups, 10000);
  int differ = 0;
  for (int64_t i = 0; i < 10000; ++i) {
    EXPECT_EQ(a.Permute(i), b.Permute(i));
    differ += a.Permute(i) != c.Permute(i);
  }
  EXPECT_GT(differ, 8000);  // a group whose rotation is 0 keeps its ids
}

TEST(ZipfTest, DeterministicInRangeAndSkewed) {
  auto m = Model(10000);
  JavaRandom r1(7), r2(7);
  std::map<int64_t, int> freq;
  for (int i = 0; i < 200000; ++i) {
    const int64_t a = m->LinkReadId(r1);
    ASSERT_EQ(a, m->LinkReadId(r2));
    ASSERT_GE(a, 1);
    ASSERT_LT(a, 10001);
    ++freq[a];
  }
  // Zipf(0.8) over 10,000 ranks: the hottest id gets about 1/H(10000, 0.8) ~ 3.8%.
  int top = 0;
  for (const auto& [id, n] : freq) top = std::max(top, n);
  EXPECT_NEAR(top / 200000.0, 1.0 / GeneralizedHarmonic(10000, 0.8), 0.005);
  ZipfDistribution z(1, 10001, 0.8);
  EXPECT_EQ(z.Quantile(0.0), 1);
  EXPECT_EQ(z.Quantile(0.999999), 10000);
}

TEST(MixTest, FrequenciesConvergeToTheConfiguredShares) {
  for (const std::string mix : {"linkbench", "tao"}) {
    auto m = Model(10000, mix);
    Requester req(*m, 0, 1, 99);
    JavaRandom rng(5);
    std::array<int64_t, kOpTypeCount> counts{};
    const int n = 1000000;
    for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(req.ChooseOp(rng.NextDouble() * 100))];
    double sum = 0;
    for (size_t i = 0; i < kOpTypeCount; ++i) {
      EXPECT_NEAR(100.0 * counts[i] / n, m->workload().mix[i], 0.2) << mix << " " << kOpNames[i];
      sum += m->workload().mix[i];
    }
    EXPECT_NEAR(sum, 100, 1e-9);
  }
}

TEST(MixTest, RequestPhaseRunsTheMixOnTheMemoryBackend) {
  // 10,000 nodes: below 2048 the shufflers are the identity (every rotation is
  // nextInt(1) = 0), which makes the hub the hottest id and MemoryGraph's list scans slow.
  auto m = Model(10000);
  auto backend = OpenMemoryBackend({});
  ASSERT_TRUE(backend.ok());
  LoadOptions lo;
  lo.progress = false;
  lo.loaders = 2;
  absl::StatusOr<LoadResult> load = RunLoadPhase(**backend, *m, lo);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->links, ExpectedLinks(*m));
  EXPECT_EQ(load->nodes, 10000);
  EXPECT_EQ(load->id_mismatches, 0);
  RequestOptions ro;
  ro.requesters = 2;
  ro.requests = 50000;
  ro.progress = false;
  absl::StatusOr<RequestResult> r = RunRequestPhase(**backend, *m, ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  EXPECT_EQ(r->requests, 100000u);
  for (size_t i = 0; i < kOpTypeCount; ++i) {
    EXPECT_NEAR(100.0 * r->stats->latency[i].count() / 100000, m->workload().mix[i], 0.6) << kOpNames[i];
  }
  EXPECT_GT(r->stats->multiget_found, 0u);
}

// The memory backend behind a count of the requests made (and, with `fail`, every
// request failing), and of the requests made before StartMeasuring.
class CountingBackend final : public Backend {
 public:
  CountingBackend(std::unique_ptr<Backend> inner, bool fail) : inner_(std::move(inner)), fail_(fail) {}
  std::string Describe() const override { return "counting " + inner_->Describe(); }
  absl::StatusOr<std::unique_ptr<Connection>> Connect() override {
    absl::StatusOr<std::unique_ptr<Connection>> c = inner_->Connect();
    if (!c.ok()) return c.status();
    return std::make_unique<Counted>(*this, *std::move(c));
  }
  void StartMeasuring() override {
    ++measuring_calls;
    before_measuring = calls.load();
  }
  std::atomic<uint64_t> calls{0};
  uint64_t before_measuring = 0;
  int measuring_calls = 0;

 private:
  class Counted final : public Connection {
   public:
    Counted(CountingBackend& b, std::unique_ptr<Connection> c) : b_(b), c_(std::move(c)) {}
    absl::StatusOr<int64_t> AddNode(graph::Node n) override { return Count(c_->AddNode(std::move(n))); }
    absl::StatusOr<std::vector<int64_t>> AddNodes(std::vector<graph::Node> n) override {
      return c_->AddNodes(std::move(n));
    }
    absl::StatusOr<std::optional<graph::Node>> GetNode(int64_t id, int32_t type) override {
      return Count(c_->GetNode(id, type));
    }
    absl::StatusOr<bool> UpdateNode(graph::Node n) override { return Count(c_->UpdateNode(std::move(n))); }
    absl::StatusOr<bool> DeleteNode(int64_t id, int32_t type) override { return Count(c_->DeleteNode(id, type)); }
    absl::Status ResetNodeIds(int64_t start) override { return c_->ResetNodeIds(start); }
    absl::StatusOr<bool> AddLink(graph::Link l) override { return Count(c_->AddLink(std::move(l))); }
    absl::StatusOr<uint64_t> AddLinks(int64_t id1, int64_t type, std::vector<graph::Link> l) override {
      return c_->AddLinks(id1, type, std::move(l));
    }
    absl::StatusOr<bool> DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) override {
      return Count(c_->DeleteLink(id1, type, id2, expunge));
    }
    absl::StatusOr<std::vector<graph::Link>> GetLinks(int64_t id1, int64_t type,
                                                      absl::Span<const int64_t> id2s) override {
      return Count(c_->GetLinks(id1, type, id2s));
    }
    absl::StatusOr<std::vector<graph::Link>> GetLinkList(const graph::LinkRange& r) override {
      return Count(c_->GetLinkList(r));
    }
    absl::StatusOr<uint64_t> CountLinks(int64_t id1, int64_t type) override { return Count(c_->CountLinks(id1, type)); }

   private:
    template <typename T>
    absl::StatusOr<T> Count(absl::StatusOr<T> r) {
      ++b_.calls;
      if (b_.fail_) return absl::UnavailableError("injected");
      return r;
    }
    CountingBackend& b_;
    std::unique_ptr<Connection> c_;
  };
  std::unique_ptr<Backend> inner_;
  const bool fail_;
};

RequestOptions WarmThenMeasure(int requesters, int64_t warmup, int64_t requests) {
  RequestOptions ro;
  ro.requesters = requesters;
  ro.warmup_requests = warmup;
  ro.requests = requests;
  ro.progress = false;
  return ro;
}

TEST(MixTest, WarmUpRequestsRunFirstAndAreMeasuredNowhere) {
  auto m = Model(10000);
  auto memory = OpenMemoryBackend({});
  ASSERT_TRUE(memory.ok());
  auto counting = std::make_unique<CountingBackend>(*std::move(memory), /*fail=*/false);
  CountingBackend& counted = *counting;
  // As the farm backend runs: in an id space, which must pass StartMeasuring on.
  std::unique_ptr<Backend> in_space = InIdSpace(std::move(counting), int64_t{5} << kIdSpaceBits);
  Backend& backend = *in_space;
  LoadOptions lo;
  lo.progress = false;
  ASSERT_TRUE(RunLoadPhase(backend, *m, lo).ok());
  absl::StatusOr<RequestResult> r = RunRequestPhase(backend, *m, WarmThenMeasure(4, 3000, 2000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  EXPECT_EQ(r->requests, 8000u);
  uint64_t measured = 0;
  for (size_t i = 0; i < kOpTypeCount; ++i) measured += r->stats->latency[i].count();
  EXPECT_EQ(measured, 8000u);
  // Every warm-up request was made before the measuring started, no measured one.
  EXPECT_EQ(counted.measuring_calls, 1);
  EXPECT_EQ(counted.before_measuring, 12000u);
  EXPECT_EQ(counted.calls.load(), 20000u);
}

TEST(MixTest, RequestersFailingInTheWarmUpDoNotHoldTheOthers) {
  auto m = Model(10000);
  auto memory = OpenMemoryBackend({});
  ASSERT_TRUE(memory.ok());
  CountingBackend backend(*std::move(memory), /*fail=*/true);
  absl::StatusOr<RequestResult> r = RunRequestPhase(backend, *m, WarmThenMeasure(3, 100, 100));
  ASSERT_TRUE(r.ok()) << r.status();
  // max_failed 0, as LinkBench: each requester stops at its first (warm-up) failure.
  EXPECT_EQ(r->errors, 3u);
  EXPECT_EQ(r->aborted_requesters, 3);
  EXPECT_EQ(r->requests, 0u);
  EXPECT_NE(r->first_error.find("injected"), std::string::npos) << r->first_error;
  EXPECT_EQ(backend.calls.load(), 3u);
}

TEST(PayloadTest, SizesHaveTheDocumentedMedians) {
  auto m = Model(10000);
  JavaRandom rng(3);
  std::vector<size_t> links, nodes;
  for (int i = 0; i < 100001; ++i) {
    links.push_back(m->LinkDataSize(rng));
    nodes.push_back(m->NodeDataSize(rng));
  }
  std::sort(links.begin(), links.end());
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(links[50000], 8u);
  EXPECT_NEAR(static_cast<double>(nodes[50000]), 128, 3);
  EXPECT_LE(links.back(), 254u);  // clamped below MAX_LINK_DATA = 255
  EXPECT_EQ(links.front(), 0u);
  // sigma 1: the 84th percentile is about e times the median.
  EXPECT_NEAR(static_cast<double>(nodes[84134]) / 128, 2.718, 0.15);
}

TEST(PayloadTest, MotifBytesStayInRangeAndRepeat) {
  DataGenConfig cfg;  // link_add: 32..100, uniqueness 0.225, 512-byte motif buffer
  MotifGenerator gen(cfg);
  JavaRandom rng(11);
  std::string all;
  for (int i = 0; i < 200; ++i) {
    const std::string d = gen.Fill(rng, 200);
    ASSERT_EQ(d.size(), 200u);
    all += d;
  }
  std::set<char> bytes(all.begin(), all.end());
  EXPECT_GE(*bytes.begin(), 32);
  EXPECT_LE(*bytes.rbegin(), 100);
  // Most 128-byte chunks are copies from the motif buffer: a 16-byte window recurs.
  std::set<std::string> windows;
  int repeats = 0;
  for (size_t i = 0; i + 16 <= all.size(); i += 16) repeats += !windows.insert(all.substr(i, 16)).second;
  EXPECT_GT(repeats, 100);
}

TEST(MultigetTest, GeometricSizesInRange) {
  auto m = Model(10000);
  JavaRandom rng(1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const int n = m->MultigetSize(rng);
    ASSERT_GE(n, 1);
    ASSERT_LT(n, 128);
    sum += n;
  }
  // (quirk) min + ceil(ln(1-r)/ln(1-p)): mean about 1 + 1/p = 3.6.
  EXPECT_NEAR(sum / 100000, 1 + 1 / 0.382, 0.1);
}

TEST(WorkloadTest, BadFilesAndKeysAreClearErrors) {
  EXPECT_EQ(Properties::Load("/nonexistent/x.properties").status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<Properties> p = Properties::Parse("startid1 = 1\nmaxid1 = abc\n", "test");
  ASSERT_TRUE(p.ok());
  absl::StatusOr<Workload> w = WorkloadFromProperties(*p);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("maxid1"), std::string::npos);
  EXPECT_FALSE(DistributionData::Parse("nlinks 0 x\n", "t").ok());
  EXPECT_FALSE(DistributionData::Parse("bogus 1 2\n", "t").ok());
}

}  // namespace
}  // namespace farm::linkbench
