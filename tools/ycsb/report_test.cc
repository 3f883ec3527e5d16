#include "tools/ycsb/report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tools/ycsb/latency_histogram.h"
#include "tools/ycsb/op_stats.h"
#include "tools/ycsb/plot.h"
#include "tools/ycsb/progress.h"

namespace farm::ycsb {
namespace {

TEST(LatencyHistogramTest, BucketsTileTheRange) {
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    ASSERT_EQ(LatencyHistogram::BucketOf(LatencyHistogram::BucketLow(i)), i);
    ASSERT_EQ(LatencyHistogram::BucketOf(LatencyHistogram::BucketHigh(i)), i);
    if (i > 0) {
      ASSERT_EQ(LatencyHistogram::BucketLow(i), LatencyHistogram::BucketHigh(i - 1) + 1);
    }
    // Relative width at most 1/32.
    const uint64_t low = LatencyHistogram::BucketLow(i);
    ASSERT_LE(LatencyHistogram::BucketHigh(i) - low, low / 32);
  }
  EXPECT_EQ(LatencyHistogram::BucketOf(~0ULL), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogramTest, PercentilesWithinBucketPrecision) {
  LatencyHistogram h;
  EXPECT_EQ(h.PercentileNs(50), 0u);
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_DOUBLE_EQ(h.MeanNs(), 50000.5);
  EXPECT_EQ(h.MinNs(), 1u);
  EXPECT_EQ(h.MaxNs(), 100000u);
  for (const double p : {50.0, 90.0, 99.0, 99.9}) {
    const double exact = p * 1000;
    const double got = static_cast<double>(h.PercentileNs(p));
    EXPECT_GE(got, exact) << p;
    EXPECT_LE(got, exact * (1 + 1.0 / 32)) << p;
  }
  EXPECT_EQ(h.PercentileNs(100), 100000u);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, all;
  for (uint64_t v = 0; v < 5000; ++v) {
    const uint64_t x = v * v % 77777;
    (v % 3 == 0 ? a : b).Record(x);
    all.Record(x);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.MeanNs(), all.MeanNs());
  EXPECT_EQ(a.MinNs(), all.MinNs());
  EXPECT_EQ(a.MaxNs(), all.MaxNs());
  for (const double p : {1.0, 50.0, 99.0, 99.9}) EXPECT_EQ(a.PercentileNs(p), all.PercentileNs(p));
}

RunReport SampleReport(std::string backend, double seconds, int reads) {
  OpStats stats;
  for (int i = 0; i < reads; ++i) stats.Record(OpType::kRead, 10'000);
  stats.Record(OpType::kUpdate, 20'000);
  stats.RecordNotFound(OpType::kRead);
  stats.RecordError(OpType::kUpdate, "boom \"quoted\"");
  RunReport r;
  r.backend = std::move(backend);
  r.workload = "a";
  r.distribution = "zipfian";
  r.threads = 2;
  r.records = 1000;
  r.seconds = seconds;
  r.SetOpStats(stats);
  r.AddFigure("space_utilisation", 0.25);
  return r;
}

TEST(RunReportTest, SetOpStatsSummarisesPerType) {
  const RunReport r = SampleReport("memcached", 2.0, 99);
  EXPECT_EQ(r.ops, 100u);
  EXPECT_EQ(r.errors, 1u);
  EXPECT_DOUBLE_EQ(r.throughput, 50.0);
  ASSERT_EQ(r.per_op.size(), 2u);
  EXPECT_EQ(r.per_op[0].type, OpType::kRead);
  EXPECT_EQ(r.per_op[0].ops, 99u);
  EXPECT_EQ(r.per_op[0].not_found, 1u);
  EXPECT_NEAR(r.per_op[0].latency.p50_us, 10.0, 10.0 / 32);
  EXPECT_EQ(r.per_op[1].errors, 1u);
  EXPECT_EQ(r.first_error, "boom \"quoted\"");
}

TEST(RunReportTest, TableComparisonAndJson) {
  const RunReport a = SampleReport("memcached", 1.0, 199);
  const RunReport b = SampleReport("redis", 2.0, 199);
  const std::string table = FormatReport(a);
  EXPECT_TRUE(absl::StrContains(table, "READ")) << table;
  EXPECT_TRUE(absl::StrContains(table, "space_utilisation=0.25")) << table;
  const RunReport both[] = {a, b};
  const std::string comparison = FormatComparison(both);
  EXPECT_TRUE(absl::StrContains(comparison, "0.50x")) << comparison;
  const std::string json = ReportsToJson(both);
  EXPECT_TRUE(absl::StrContains(json, "\"backend\": \"redis\"")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"READ\": {\"ops\": 199")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"space_utilisation\": 0.25")) << json;
  EXPECT_TRUE(absl::StrContains(json, "boom \\\"quoted\\\"")) << json;
}

TEST(RunReportTest, AcrossWorkloadsRelatesReadP99ToTheFirstWorkload) {
  RunReport c = SampleReport("farm", 1.0, 199);
  c.workload = "c";
  OpStats slower;
  for (int i = 0; i < 100; ++i) slower.Record(OpType::kRead, 30'000);
  RunReport b;
  b.backend = "farm";
  b.workload = "b";
  b.seconds = 1.0;
  b.SetOpStats(slower);
  const RunReport runs[] = {c, b};
  const std::string table = FormatAcrossWorkloads(runs);
  EXPECT_TRUE(absl::StrContains(table, "p99 vs c")) << table;
  EXPECT_TRUE(absl::StrContains(table, "1.00x")) << table;
  EXPECT_TRUE(absl::StrContains(table, "3.00x")) << table;
}

TEST(PlotTest, OneBarPerBackendGroupedByWorkload) {
  RunReport ha = SampleReport("farm:hopscotch", 1.0, 99);
  RunReport la = SampleReport("farm:linear", 2.0, 99);
  RunReport hc = SampleReport("farm:hopscotch", 1.0, 199);
  hc.workload = "c";
  const std::vector<RunReport> runs = {ha, la, hc};  // linear never ran c
  const std::string script = GnuplotScript(runs, "/tmp/x.png");
  // Throughput rows: workload, then one column per backend in first-seen order.
  EXPECT_TRUE(absl::StrContains(script, "\na 100.0 50.0\n")) << script;
  EXPECT_TRUE(absl::StrContains(script, "\nc 200.0 NaN\n")) << script;
  EXPECT_TRUE(absl::StrContains(script, "title 'farm:linear'")) << script;
  EXPECT_TRUE(absl::StrContains(script, "set output '/tmp/x.png'")) << script;
  EXPECT_EQ(WritePlot(runs, "/tmp/x.png", "/nonexistent/gnuplot").code(), absl::StatusCode::kNotFound);
}

TEST(PlotTest, GnuplotWritesThePng) {
  const std::string png = ::testing::TempDir() + "/ycsb-plot-test.png";
  std::remove(png.c_str());
  const std::vector<RunReport> runs = {SampleReport("farm", 1.0, 99), SampleReport("redis", 2.0, 99)};
  ASSERT_TRUE(WritePlot(runs, png).ok()) << "gnuplot-nox is in deploy/install-deps.sh";
  std::FILE* f = std::fopen(png.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  char magic[4] = {};
  EXPECT_EQ(std::fread(magic, 1, 4, f), 4u);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  std::fclose(f);
}

std::string ReadAll(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[256];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  return out;
}

TEST(ProgressBarTest, LinesModePrintsPeriodicLinesAndAFinalOne) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar("load x", 100, ProgressMode::kLines, f, absl::ZeroDuration());
    EXPECT_EQ(bar.mode(), ProgressMode::kLines);
    bar.Update(50);
    bar.Finish(100);
    bar.Finish(100);  // idempotent
  }
  const std::string out = ReadAll(f);
  EXPECT_TRUE(absl::StrContains(out, "load x: 50/100 (50%)")) << out;
  EXPECT_TRUE(absl::StrContains(out, "load x: 100/100 (100%)")) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  std::fclose(f);
}

TEST(ProgressBarTest, AutoOnAFileIsLinesAndOffIsSilent) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(ProgressBar("x", 1, ProgressMode::kAuto, f).mode(), ProgressMode::kLines);
  {
    ProgressBar off("x", 10, ProgressMode::kOff, f);
    off.Update(5);
    off.Finish(10);
  }
  EXPECT_EQ(ReadAll(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace farm::ycsb
