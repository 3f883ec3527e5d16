// End to end: YCSB inside a local FaRM cluster (shm and tcp), every operation type by
// operation count; every operation must succeed, every read find its record, and the
// report carry the table's figures.
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "tools/ycsb/farm_runner.h"
#include "tools/ycsb/report.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {
namespace {

double FigureOf(const RunReport& r, const std::string& name) {
  for (const Figure& f : r.figures) {
    if (f.name == name) return f.value;
  }
  ADD_FAILURE() << "no figure " << name << " in\n" << FormatReport(r);
  return -1;
}

RunConfig ByCount(WorkloadSpec spec, int64_t records, int64_t operations) {
  RunConfig c;
  c.workload = std::move(spec);
  c.workload.record_count = records;
  c.workload.operation_count = operations;
  c.threads = 1;
  c.progress = ProgressMode::kOff;
  return c;
}

FarmRunOptions Cluster(const std::string& fabric) {
  FarmRunOptions o;
  o.nodes = 2;
  o.fabric = fabric;
  o.window = 8;
  o.dir = "/tmp/farm-ycsb-test";
  return o;
}

class FarmRunnerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FarmRunnerTest, LookupsOfTheFarmPresetAreOneReadAtNinetyPercent) {
  WorkloadSpec spec = *PresetWorkload("c");
  ApplyFarmPreset(&spec);
  const RunConfig c = ByCount(spec, 4000, 20000);
  absl::StatusOr<RunReport> r = RunFarmWorkload(c, Cluster(GetParam()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  EXPECT_EQ(r->ops, 20000u);
  ASSERT_EQ(r->per_op.size(), 1u);
  EXPECT_EQ(r->per_op[0].not_found, 0u);
  EXPECT_EQ(r->threads, 2);
  EXPECT_NEAR(FigureOf(*r, "occupancy"), 0.9, 0.01);
  EXPECT_EQ(FigureOf(*r, "out_of_line_pairs"), 0);
  // H = 8 at 90%: almost every key is in its bucket or the next (kv_bench measures 1.04).
  EXPECT_GE(FigureOf(*r, "reads_per_lookup"), 1.0);
  EXPECT_LT(FigureOf(*r, "reads_per_lookup"), 1.2);
  EXPECT_GT(FigureOf(*r, "space_utilisation"), 0.4);
}

TEST_P(FarmRunnerTest, EveryOperationTypeWithOutOfLineValues) {
  // YCSB's default records (1000-byte values): out of line, two READs per lookup.
  WorkloadSpec spec = *PresetWorkload("a");
  spec.read_proportion = 0.3;
  spec.update_proportion = 0.2;
  spec.insert_proportion = 0.1;
  spec.scan_proportion = 0.2;
  spec.read_modify_write_proportion = 0.2;
  spec.max_scan_length = 20;
  spec.request_distribution = RequestDistribution::kZipfian;
  const RunConfig c = ByCount(spec, 500, 3000);
  absl::StatusOr<RunReport> r = RunFarmWorkload(c, Cluster(GetParam()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  EXPECT_EQ(r->ops, 3000u);
  ASSERT_EQ(r->per_op.size(), 5u) << FormatReport(*r);
  for (const OpTypeReport& o : r->per_op) {
    EXPECT_GT(o.ops, 0u) << OpTypeName(o.type);
    EXPECT_EQ(o.not_found, 0u) << OpTypeName(o.type) << ": reads name acknowledged inserts only";
  }
  EXPECT_EQ(FigureOf(*r, "out_of_line_pairs"), 500);
  EXPECT_GE(FigureOf(*r, "reads_per_lookup"), 2.0);
}

TEST_P(FarmRunnerTest, FewerOperationsAndRecordsThanThreads) {
  // 3 records and 3 operations over 2 nodes x 2 threads: some drivers load nothing and
  // run nothing, and the run still ends.
  RunConfig c = ByCount(*PresetWorkload("c"), 3, 3);
  c.threads = 2;
  absl::StatusOr<RunReport> r = RunFarmWorkload(c, Cluster(GetParam()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ops, 3u);
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  EXPECT_EQ(r->threads, 4);
}

TEST_P(FarmRunnerTest, ExclusiveCommitsAndAnotherLayoutRunTheSameWorkload) {
  // ycsb's farm-exclusive and farm:<layout> backends: the same checks hold.
  WorkloadSpec spec = *PresetWorkload("b");
  ApplyFarmPreset(&spec);
  const RunConfig c = ByCount(spec, 1000, 6000);
  for (const auto& [name, layout, readable] :
       {std::tuple<std::string, std::string, bool>{"farm-exclusive", "hopscotch", false},
        {"farm:linear", "linear", true}}) {
    FarmRunOptions o = Cluster(GetParam());
    o.name = name;
    o.layout = layout;
    o.readable_commits = readable;
    absl::StatusOr<RunReport> r = RunFarmWorkload(c, o);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    EXPECT_EQ(r->backend, name);
    EXPECT_EQ(r->errors, 0u) << name << ": " << r->first_error;
    EXPECT_EQ(r->ops, 6000u) << name;
    for (const OpTypeReport& op : r->per_op) EXPECT_EQ(op.not_found, 0u) << name << " " << OpTypeName(op.type);
  }
}

TEST_P(FarmRunnerTest, ChainedTableThatExpandsDuringTheLoad) {
  // 3 nodes of 1852 initial buckets each (2 slots per bucket at 90%): every partition
  // passes 1 pair per bucket halfway through the load and doubles, so the scan after
  // the load meets half-migrated partitions (each pair counted once), and the run ends
  // (the table destroyed) while expansions may still be running.
  WorkloadSpec spec = *PresetWorkload("c");
  ApplyFarmPreset(&spec);
  const RunConfig c = ByCount(spec, 10000, 4000);
  FarmRunOptions o = Cluster(GetParam());
  o.nodes = 3;
  o.name = "farm:chained";
  o.layout = "chained";
  absl::StatusOr<RunReport> r = RunFarmWorkload(c, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  EXPECT_EQ(r->ops, 4000u);
  ASSERT_EQ(r->per_op.size(), 1u);
  EXPECT_EQ(r->per_op[0].not_found, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, FarmRunnerTest, ::testing::ValuesIn(farm::testing::TestBackends()));

TEST(FarmRunnerOptionsTest, BadOptionsAreRefusedBeforeAnythingStarts) {
  const RunConfig c = ByCount(*PresetWorkload("c"), 10, 10);
  FarmRunOptions o = Cluster("shm");
  o.fabric = "carrier-pigeon";
  EXPECT_EQ(RunFarmWorkload(c, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Cluster("shm");
  o.window = 0;
  EXPECT_EQ(RunFarmWorkload(c, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Cluster("shm");
  o.occupancy = 1.5;
  EXPECT_EQ(RunFarmWorkload(c, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Cluster("shm");
  o.neighbourhood = 3;
  EXPECT_EQ(RunFarmWorkload(c, o).status().code(), absl::StatusCode::kInvalidArgument);
  RunConfig no_threads = c;
  no_threads.threads = 0;
  EXPECT_EQ(RunFarmWorkload(no_threads, Cluster("shm")).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::ycsb
