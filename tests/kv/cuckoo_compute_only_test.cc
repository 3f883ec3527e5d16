// The cuckoo layout on a cluster with a compute-only member (it holds no data table, so
// its threads claim guest slices of the storage nodes' tables with one-sided FETCH_ADD):
// its two threads write pairs, the storage nodes read and overwrite them (recycling the
// guest entries, which their owners reclaim by a scan), on every backend.
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kv/cuckoo/cuckoo_client.h"
#include "kv/local_kv_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv {
namespace {

class CuckooComputeOnlyTest : public ::testing::TestWithParam<std::string> {};

absl::Status Put(LocalKvCluster& kv, NodeId on, size_t t, const std::string& key,
                 const std::string& value) {
  absl::StatusOr<KeyOpResult> r = kv.Run<absl::StatusOr<KeyOpResult>>(
      on, t,
      [=](KvClient& c, auto finish) { c.Update(OpKind::kPut, key, value, 0, std::move(finish)); });
  return r.ok() ? r->status : r.status();
}

absl::StatusOr<std::optional<std::string>> Get(LocalKvCluster& kv, NodeId on,
                                               const std::string& key) {
  using Result = absl::StatusOr<std::optional<std::string>>;
  return kv.Run<Result>(on, 0, [key](KvClient& c, auto finish) {
    c.Get(key,
          [finish = std::move(finish)](absl::StatusOr<std::optional<absl::string_view>> r) mutable {
            if (!r.ok()) return finish(r.status());
            finish(r->has_value() ? std::optional<std::string>(std::string(**r)) : std::nullopt);
          });
  });
}

TEST_P(CuckooComputeOnlyTest, AComputeOnlyMembersThreadsWriteIntoGuestSlices) {
  InProcessClusterOptions cluster;
  cluster.backend = GetParam();
  cluster.nodes = 3;
  cluster.compute_only_nodes = 1;  // node 3
  cluster.threads = 2;
  cluster.replication = 2;
  cluster.rdma_devices = farm::testing::TestVerbsDevices();
  cluster.dir =
      ::testing::TempDir() + "cuckoo_compute_only_" + GetParam() + "_" + std::to_string(::getpid());
  KvTableOptions table{"cuckoo", TableOptions{}};
  table.table.buckets_per_node =
      16;  // 64 pairs per node: guest slices of 64 + 16 + 64 small entries
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> started = LocalKvCluster::Start(cluster, table);
  ASSERT_TRUE(started.ok()) << started.status();
  LocalKvCluster& kv = **started;
  // 5 rounds of 40 pairs from each compute-only thread (more than its guest slice holds in
  // all: overwrites from the storage nodes recycle them), read back from every node.
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 40; ++i) {
      for (size_t t = 0; t < 2; ++t) {
        const std::string key = absl::StrCat("t", t, "-", i);
        ASSERT_TRUE(Put(kv, 3, t, key, absl::StrCat("compute-", round, "-", key)).ok())
            << key << " round " << round;
      }
    }
    for (int i = 0; i < 40; ++i) {
      for (size_t t = 0; t < 2; ++t) {
        const std::string key = absl::StrCat("t", t, "-", i);
        for (NodeId on = 1; on <= 3; ++on) {
          absl::StatusOr<std::optional<std::string>> got = Get(kv, on, key);
          ASSERT_TRUE(got.ok() && got->has_value()) << key;
          EXPECT_EQ(**got, absl::StrCat("compute-", round, "-", key));
        }
        ASSERT_TRUE(Put(kv, 1 + i % 2, 0, key, absl::StrCat("storage-", round, "-", key)).ok())
            << key;
        EXPECT_EQ(**Get(kv, 3, key), absl::StrCat("storage-", round, "-", key));
      }
    }
  }
  // The compute-only threads wrote more pairs than their slices hold: they reclaimed
  // the entries the storage nodes' overwrites marked recycled.
  for (size_t t = 0; t < 2; ++t) {
    absl::StatusOr<uint64_t> reclaims =
        kv.Run<absl::StatusOr<uint64_t>>(3, t, [](KvClient& c, auto finish) {
          finish(dynamic_cast<cuckoo::CuckooClient&>(c).ops().update_stats().reclaims);
        });
    ASSERT_TRUE(reclaims.ok());
    EXPECT_GT(*reclaims, 0u) << "thread " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CuckooComputeOnlyTest,
                         ::testing::ValuesIn(farm::testing::TestBackends()));

}  // namespace
}  // namespace farm::kv
