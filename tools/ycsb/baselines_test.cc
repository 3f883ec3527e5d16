// End to end: the synchronous runner against real memcached and redis-server processes,
// about a second each, with every operation type; every operation must succeed and
// every read find its record.
#include <memory>

#include "gtest/gtest.h"
#include "tools/common/memcached_server.h"
#include "tools/ycsb/baseline_backends.h"
#include "tools/ycsb/memcached_backend.h"
#include "tools/ycsb/redis_backend.h"
#include "tools/ycsb/report.h"

namespace farm::ycsb {
namespace {

RunConfig AllOperations() {
  RunConfig c;
  c.workload.name = "mixed";
  c.workload.record_count = 500;
  c.workload.read_proportion = 0.3;
  c.workload.update_proportion = 0.2;
  c.workload.insert_proportion = 0.1;
  c.workload.scan_proportion = 0.2;
  c.workload.read_modify_write_proportion = 0.2;
  c.workload.max_scan_length = 20;
  c.workload.request_distribution = RequestDistribution::kZipfian;
  ApplyFarmPreset(&c.workload);
  c.threads = 2;
  c.duration = absl::Seconds(1);
  c.warmup = absl::Milliseconds(100);
  c.server_threads = 2;
  c.progress = ProgressMode::kOff;
  return c;
}

const Figure* FindFigure(const RunReport& r, absl::string_view name) {
  for (const Figure& f : r.figures) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void ExpectCleanRun(const RunReport& r, const RunConfig& c) {
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_EQ(r.records, c.workload.record_count);
  EXPECT_EQ(r.key_bytes, 16u);
  EXPECT_EQ(r.value_bytes, 32u);
  EXPECT_GT(r.seconds, 0.9);
  ASSERT_EQ(r.per_op.size(), 5u) << FormatReport(r);
  uint64_t inserts = 0;
  for (const OpTypeReport& o : r.per_op) {
    EXPECT_GT(o.ops, 0u) << OpTypeName(o.type);
    EXPECT_EQ(o.not_found, 0u) << OpTypeName(o.type);
    EXPECT_EQ(o.errors, 0u) << OpTypeName(o.type);
    EXPECT_GT(o.latency.p50_us, 0);
    if (o.type == OpType::kInsert) inserts = o.ops;
  }
  const Figure* items = FindFigure(r, "server_items");
  ASSERT_NE(items, nullptr);
  // Loaded records plus the measured inserts plus those of the warm-up.
  EXPECT_GE(items->value, static_cast<double>(c.workload.record_count + inserts));
  const Figure* space = FindFigure(r, "space_utilisation");
  ASSERT_NE(space, nullptr);
  EXPECT_GT(space->value, 0.0);
  EXPECT_LT(space->value, 1.0);
}

TEST(BaselinesTest, MemcachedRunsEveryOperationCleanly) {
  const RunConfig c = AllOperations();
  absl::StatusOr<RunReport> r = RunMemcached(c, BaselineOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCleanRun(*r, c);
}

TEST(BaselinesTest, MemcachedBinaryProtocolRunsEveryOperationCleanly) {
  RunConfig c = AllOperations();
  c.duration = absl::Milliseconds(500);
  c.warmup = absl::ZeroDuration();
  absl::StatusOr<RunReport> r = RunMemcached(c, BaselineOptions{.memcached_binary_protocol = true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0u) << r->first_error;
  for (const OpTypeReport& o : r->per_op) EXPECT_EQ(o.not_found, 0u) << OpTypeName(o.type);
}

TEST(BaselinesTest, RedisRunsEveryOperationCleanly) {
  const RunConfig c = AllOperations();
  absl::StatusOr<RunReport> r = RunRedis(c);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCleanRun(*r, c);
}

TEST(BaselinesTest, OperationCountBoundsTheRun) {
  RunConfig c = AllOperations();
  c.workload.operation_count = 3001;
  c.threads = 3;
  absl::StatusOr<RunReport> r = RunRedis(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ops, 3001u);
  EXPECT_EQ(r->errors, 0u) << r->first_error;
}

TEST(BaselinesTest, ClientsSeeMissingAndDuplicateRecords) {
  absl::StatusOr<std::unique_ptr<bench::MemcachedServer>> server =
      bench::MemcachedServer::Start({.threads = 1, .memory_mb = 8});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<SyncKvClient>> c = ConnectMemcached({.port = (*server)->port()});
  ASSERT_TRUE(c.ok()) << c.status();
  std::string value;
  EXPECT_EQ((*c)->Get("nokey", &value).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE((*c)->Insert("k1", "v1").ok());
  EXPECT_EQ((*c)->Insert("k1", "v2").code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*c)->Update("k1", "v3").ok());
  ASSERT_TRUE((*c)->Get("k1", &value).ok());
  EXPECT_EQ(value, "v3");
}

TEST(BaselinesTest, ConnectingToNoServerIsUnavailable) {
  absl::StatusOr<std::unique_ptr<bench::MemcachedServer>> server =
      bench::MemcachedServer::Start({.threads = 1, .memory_mb = 8});
  ASSERT_TRUE(server.ok()) << server.status();
  const uint16_t port = (*server)->port();
  server->reset();  // stopped: nothing listens on the port now
  EXPECT_EQ(ConnectMemcached({.port = port, .timeout = absl::Milliseconds(500)}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ConnectRedis({.port = port, .timeout = absl::Milliseconds(500)}).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace farm::ycsb
