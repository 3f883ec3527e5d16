// The linear-probing layout's own behaviour on a 3-node in-process cluster (shm and
// tcp; a model-sized and a fixed 2-slot READ with one slot per object): removes leave
// tombstones and clear runs that end at an empty slot; probe runs that cross shard
// boundaries and wrap around the table's end; a full table refuses inserts and still
// answers; the read size follows the load estimate; transactions. The layout-neutral
// behaviour (size classes, increments, fills, linearizability) is in table_test.cc and
// linearizability_test.cc, parameterised by layout.
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kv/layout.h"
#include "kv/linear/linear_client.h"
#include "kv/table_store.h"
#include "tests/kv/kv_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv {
namespace {

using linear::LinearClient;
using linear::ProbeMap;
using testing::KvCluster;

// `count` keys whose home slot is `home`, named from `prefix`.
std::vector<std::string> KeysWithHome(const ProbeMap& map, uint64_t home, int count, const std::string& prefix) {
  std::vector<std::string> keys;
  for (uint64_t i = 0; keys.size() < static_cast<size_t>(count); ++i) {
    std::string key = absl::StrCat(prefix, i);
    if (map.HomeOf(HashKey(key)) == home) keys.push_back(std::move(key));
  }
  return keys;
}

class LinearTableTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  // 3 nodes of `slots` slots each (H = 4: buckets_per_node = slots / 2).
  std::unique_ptr<KvCluster> Start(const std::string& name, uint64_t slots) {
    const auto& [backend, layout] = GetParam();
    KvTableOptions o;
    o.layout = layout;
    o.table.layout.neighbourhood = 4;
    o.table.buckets_per_node = slots / 2;
    absl::StatusOr<std::unique_ptr<KvCluster>> kv = KvCluster::Start(backend, 3, name, o);
    EXPECT_TRUE(kv.ok()) << kv.status();
    return kv.ok() ? std::move(*kv) : nullptr;
  }
  static const ProbeMap& Map(KvCluster& kv) { return kv.client_as<LinearClient>(1).map(); }
  static void ExpectEverywhere(KvCluster& kv, const std::string& key, std::optional<std::string> value) {
    for (NodeId on = 1; on <= 3; ++on) {
      absl::StatusOr<std::optional<std::string>> got = kv.Get(on, key);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, value) << key << " from node " << on;
    }
  }
};

TEST_P(LinearTableTest, RemovesLeaveTombstonesAndClearRunsThatEndAtAnEmptySlot) {
  std::unique_ptr<KvCluster> kv = Start("linear_tombstones", 32);
  ASSERT_NE(kv, nullptr);
  const std::vector<std::string> k = KeysWithHome(Map(*kv), 5, 6, "t");
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(kv->Put(1 + i % 3, k[i], "v" + k[i]).ok());  // slots 5..8
  auto scan = [&] {
    absl::StatusOr<TableScan> s = kv->Scan(2);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or(TableScan{});
  };
  EXPECT_EQ(scan().longest_run, 4u);
  // The second: its next slot is taken, so a tombstone keeps the run whole.
  ASSERT_EQ(*kv->Remove(2, k[1]), true);
  EXPECT_EQ(scan().tombstones, 1u);
  ExpectEverywhere(*kv, k[1], std::nullopt);
  for (int i : {0, 2, 3}) ExpectEverywhere(*kv, k[i], "v" + k[i]);
  // The last of the run: its next slot is empty, so it is cleared (the pair before it
  // is not a tombstone: nothing more).
  ASSERT_EQ(*kv->Remove(3, k[3]), true);
  EXPECT_EQ(scan().tombstones, 1u);
  EXPECT_EQ(scan().longest_run, 3u);
  // Now the third ends the run: it and the tombstone before it are cleared.
  ASSERT_EQ(*kv->Remove(1, k[2]), true);
  EXPECT_EQ(scan().tombstones, 0u);
  EXPECT_EQ(scan().pairs, 1u);
  ExpectEverywhere(*kv, k[0], "v" + k[0]);
  // A tombstone is reused by the next insert whose probe meets it.
  ASSERT_TRUE(kv->Put(1, k[4], "v" + k[4]).ok());  // slot 6
  ASSERT_EQ(*kv->Remove(1, k[0]), true);           // slot 5: a tombstone
  EXPECT_EQ(scan().tombstones, 1u);
  ASSERT_TRUE(kv->Put(2, k[5], "v" + k[5]).ok());  // takes slot 5
  EXPECT_EQ(scan().tombstones, 0u);
  EXPECT_EQ(scan().pairs, 2u);
  ExpectEverywhere(*kv, k[4], "v" + k[4]);
  ExpectEverywhere(*kv, k[5], "v" + k[5]);
  ExpectEverywhere(*kv, k[0], std::nullopt);
}

// Tombstones left before a run's end by removes of keys homed further on: a later
// remove whose slot is followed by them and then an empty slot clears them all, and
// so does an insert whose probe stops at that empty slot.
TEST_P(LinearTableTest, RunEndsAreReclaimedByRemovesAndInserts) {
  std::unique_ptr<KvCluster> kv = Start("linear_run_ends", 32);
  ASSERT_NE(kv, nullptr);
  const ProbeMap& map = Map(*kv);
  auto tombstones = [&] {
    absl::StatusOr<TableScan> s = kv->Scan(2);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? s->tombstones : ~uint64_t{0};
  };
  // Twice: once reclaimed by a remove, once by an insert.
  for (const uint64_t h : {uint64_t{3}, uint64_t{20}}) {
    SCOPED_TRACE(h);
    const std::vector<std::string> k = KeysWithHome(map, h, 4, absl::StrCat("e", h, "-"));  // slots h..h+2, then one more
    const std::string x = KeysWithHome(map, h + 3, 1, absl::StrCat("x", h, "-"))[0];        // slot h+3
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(kv->Put(1 + i % 3, k[i], "v" + k[i]).ok());
    ASSERT_TRUE(kv->Put(2, x, "vx").ok());
    ASSERT_EQ(*kv->Remove(1, k[1]), true);  // h+1: a tombstone (h+2 is taken)
    ASSERT_EQ(*kv->Remove(2, k[2]), true);  // h+2: a tombstone (x is at h+3)
    ASSERT_EQ(*kv->Remove(3, x), true);     // h+3: cleared; its probe began at h+3
    EXPECT_EQ(tombstones(), 2u);
    if (h == 3) {
      ASSERT_EQ(*kv->Remove(1, k[0]), true);  // h, then h+1 and h+2 up to the empty h+3
      EXPECT_EQ(tombstones(), 0u);
      ExpectEverywhere(*kv, k[0], std::nullopt);
    } else {
      ASSERT_TRUE(kv->Put(3, k[3], "v" + k[3]).ok());  // takes h+1 and clears h+2
      EXPECT_EQ(tombstones(), 0u);
      ExpectEverywhere(*kv, k[0], "v" + k[0]);
      ExpectEverywhere(*kv, k[3], "v" + k[3]);
    }
    ExpectEverywhere(*kv, k[1], std::nullopt);
    ExpectEverywhere(*kv, x, std::nullopt);
  }
}

TEST_P(LinearTableTest, ProbesCrossShardBoundariesAndWrapAroundTheEnd) {
  std::unique_ptr<KvCluster> kv = Start("linear_wrap", 32);
  ASSERT_NE(kv, nullptr);
  const ProbeMap& map = Map(*kv);
  ASSERT_GE(map.shards().size(), 3u);
  const uint64_t m = map.slots();
  const uint64_t boundary = map.FirstSlotOf(linear::GroupRef{1, 0});  // shard 1's first slot
  // Runs over the table's end (homes m - 2) and over a shard boundary, with some values
  // out of line.
  const std::vector<std::string> wrap = KeysWithHome(map, m - 2, 6, "w");
  const std::vector<std::string> cross = KeysWithHome(map, boundary - 1, 5, "x");
  auto value = [](const std::string& key, int i) { return i % 2 ? std::string(100, key[0]) + key : "v" + key; };
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(kv->Put(1 + i % 3, wrap[i], value(wrap[i], i)).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(kv->Put(1 + i % 3, cross[i], value(cross[i], i)).ok());
  for (int i = 0; i < 6; ++i) ExpectEverywhere(*kv, wrap[i], value(wrap[i], i));
  for (int i = 0; i < 5; ++i) ExpectEverywhere(*kv, cross[i], value(cross[i], i));
  // Absent keys of the same homes probe the whole runs.
  for (const std::string& key : KeysWithHome(map, m - 2, 8, "w")) {
    if (std::find(wrap.begin(), wrap.end(), key) == wrap.end()) ExpectEverywhere(*kv, key, std::nullopt);
  }
  // Removes from the middle leave tombstones the later pairs are still found past.
  ASSERT_EQ(*kv->Remove(2, wrap[1]), true);
  ASSERT_EQ(*kv->Remove(3, cross[0]), true);
  for (int i = 0; i < 6; ++i) ExpectEverywhere(*kv, wrap[i], i == 1 ? std::nullopt : std::optional(value(wrap[i], i)));
  for (int i = 0; i < 5; ++i) {
    ExpectEverywhere(*kv, cross[i], i == 0 ? std::nullopt : std::optional(value(cross[i], i)));
  }
  // Removed last to first, each run is cleared whole: no tombstones stay.
  for (int i = 5; i >= 0; --i) {
    if (i == 1) continue;
    ASSERT_EQ(*kv->Remove(1, wrap[i]), true);
  }
  for (int i = 4; i >= 1; --i) ASSERT_EQ(*kv->Remove(2, cross[i]), true);
  absl::StatusOr<TableScan> scan = kv->Scan(3);
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->pairs, 0u);
  EXPECT_EQ(scan->tombstones, 0u);
}

TEST_P(LinearTableTest, AFullTableRefusesInsertsAndStillAnswers) {
  std::unique_ptr<KvCluster> kv = Start("linear_full", 8);  // 24 slots
  ASSERT_NE(kv, nullptr);
  const uint64_t m = Map(*kv).slots();
  for (uint64_t i = 0; i < m; ++i) ASSERT_TRUE(kv->Put(1 + i % 3, absl::StrCat("f", i), absl::StrCat(i)).ok()) << i;
  const absl::Status refused = kv->Put(2, "one too many", "x");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  for (uint64_t i = 0; i < m; ++i) ExpectEverywhere(*kv, absl::StrCat("f", i), absl::StrCat(i));
  ExpectEverywhere(*kv, "one too many", std::nullopt);
  ExpectEverywhere(*kv, "never there", std::nullopt);
  ASSERT_EQ(*kv->Remove(3, "f7"), true);
  ASSERT_TRUE(kv->Put(2, "one too many", "x").ok());
  ExpectEverywhere(*kv, "one too many", "x");
}

TEST_P(LinearTableTest, TheReadSizeFollowsTheLoadEstimate) {
  std::unique_ptr<KvCluster> kv = Start("linear_read_size", 800);  // 2400 slots
  ASSERT_NE(kv, nullptr);
  const uint64_t m = Map(*kv).slots();
  for (uint64_t i = 0; i < m * 9 / 10; ++i) ASSERT_TRUE(kv->Put(1 + i % 3, absl::StrCat("r", i), "v").ok()) << i;
  struct Seen {
    double load = 0;
    uint32_t r = 0;
    uint32_t model_r = 0;
    bool fixed = false;
  };
  absl::StatusOr<Seen> seen = kv->kv().Run<absl::StatusOr<Seen>>(2, 0, [m](KvClient& client, auto finish) {
    auto& c = dynamic_cast<LinearClient&>(client);
    const uint32_t groups = static_cast<uint32_t>(m / c.map().slots_per_group());
    c.reader().SampleLoad(groups, [&c, finish = std::move(finish)](absl::Status s) mutable {
      if (!s.ok()) return finish(s);
      const double load = c.reader().load_estimate();
      finish(Seen{load, c.reader().read_size(), c.table().read_sizes.For(load), c.table().read_sizes.fixed()});
    });
  });
  ASSERT_TRUE(seen.ok()) << seen.status();
  // The last LoadEstimate::kWindow random groups (with repeats): near the true 0.9.
  EXPECT_NEAR(seen->load, 0.9, 0.1);
  EXPECT_EQ(seen->r, seen->model_r);
  if (std::get<1>(GetParam()) == "linear:R=2,G=1") {
    EXPECT_TRUE(seen->fixed);
    EXPECT_EQ(seen->r, 2u);
  } else {
    EXPECT_FALSE(seen->fixed);
    EXPECT_GT(seen->r, 1u);
  }
  // Every key is found at that read size, and lookups count their READs.
  for (uint64_t i = 0; i < m * 9 / 10; i += 7) ExpectEverywhere(*kv, absl::StrCat("r", i), "v");
  EXPECT_GT(kv->client(1).lookup_stats().reads, 0u);
}

TEST_P(LinearTableTest, TransactionsSeeTheirOwnWritesAndCommitAtomically) {
  std::unique_ptr<KvCluster> kv = Start("linear_txn", 32);
  ASSERT_NE(kv, nullptr);
  ASSERT_TRUE(kv->Put(1, "gone", "soon").ok());
  absl::Status committed = kv->kv().Run<absl::Status>(2, 1, [](KvClient& c, auto finish) {
    struct Run {
      std::unique_ptr<StoreTxn> txn;
      Done<absl::Status> finish;
    };
    auto run = std::make_shared<Run>(Run{c.BeginTxn(), std::move(finish)});
    run->txn->Put("a", std::string(200, 'a'), [run](absl::Status s) {
      if (!s.ok()) return run->finish(s);
      run->txn->Increment("n", 41, [run](absl::StatusOr<int64_t> n) {
        if (!n.ok() || *n != 41) return run->finish(absl::InternalError("increment"));
        run->txn->Get("a", [run](absl::StatusOr<std::optional<std::string>> a) {
          if (!a.ok() || *a != std::string(200, 'a')) return run->finish(absl::InternalError("own write unseen"));
          run->txn->Remove("gone", [run](absl::StatusOr<bool> existed) {
            if (!existed.ok() || !*existed) return run->finish(absl::InternalError("remove"));
            run->txn->Commit([run](absl::Status s) { run->finish(s); });
          });
        });
      });
    });
  });
  ASSERT_TRUE(committed.ok()) << committed;
  ExpectEverywhere(*kv, "a", std::string(200, 'a'));
  ExpectEverywhere(*kv, "n", "41");
  ExpectEverywhere(*kv, "gone", std::nullopt);
}

TEST(LinearLayoutNameTest, AClusterWithAnUnknownLayoutDoesNotStart) {
  KvTableOptions o;
  o.layout = "robinhood";
  absl::StatusOr<std::unique_ptr<KvCluster>> kv = KvCluster::Start("shm", 1, "linear_robinhood", o, 1);
  ASSERT_FALSE(kv.ok());
  EXPECT_NE(kv.status().message().find("built layouts: hopscotch, linear, chained, cuckoo"), absl::string_view::npos)
      << kv.status();
}

INSTANTIATE_TEST_SUITE_P(Layouts, LinearTableTest,
                         ::testing::Combine(::testing::ValuesIn(farm::testing::TestBackends()),
                                            ::testing::Values("linear", "linear:R=2,G=1")),
                         [](const auto& info) {
                           std::string layout = std::get<1>(info.param);
                           for (char& c : layout) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return std::get<0>(info.param) + "_" + layout;
                         });

}  // namespace
}  // namespace farm::kv
