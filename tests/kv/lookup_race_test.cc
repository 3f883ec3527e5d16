// A lock-free lookup that meets a remove reshuffling its key's chain, forced
// deterministically: the lookup pauses at the reader's test seam (after the bucket READ,
// or after some chain blocks), a remove runs to completion there, then the lookup goes
// on. Erase fills the hole with the chain's last pair, so the pair moves to a place
// the paused lookup has already passed; the lookup must still find it (issue 21: it
// answered "absent" whenever a block lay between the hole and the chain's last block).
//
// H = 2 (one slot per bucket) and every key shares one home bucket h, so the layout is
// known: key 0 in h, key 1 in h + 1, then blocks of two pairs in insertion order.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kv/layout.h"
#include "kv/table_client.h"
#include "kv/table_store.h"
#include "tests/kv/kv_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv {
namespace {

using testing::KvCluster;

// One forced interleaving: a chain of `blocks` overflow blocks, the last holding
// `last_pairs` pairs; the lookup of the chain's last pair pauses before reading block
// `pause_at` + 1 (0: right after the buckets) while the key in `hole` is removed.
struct RaceCase {
  uint32_t blocks;
  uint32_t last_pairs;  // 1 or 2
  uint32_t hole;        // 0 and 1: the buckets; 2 + 2i and 3 + 2i: block i + 1's pairs
  size_t pause_at;

  std::string Name() const {
    return absl::StrFormat(
        "chain of %d blocks (last holds %d), hole at pair %d, lookup paused after %d blocks",
        blocks, last_pairs, hole, pause_at);
  }
};

// Every interleaving where the moved pair lands where the lookup has been: the hole in
// a bucket (pause right after the bucket READ) or in a block already read.
std::vector<RaceCase> Cases() {
  std::vector<RaceCase> cases;
  for (uint32_t blocks = 1; blocks <= 4; ++blocks) {
    for (uint32_t last_pairs = 1; last_pairs <= 2; ++last_pairs) {
      const uint32_t pairs = 2 + 2 * (blocks - 1) + last_pairs;
      for (uint32_t hole = 0; hole + 1 < pairs; ++hole) {
        const size_t block_of_hole = hole < 2 ? 0 : (hole - 2) / 2 + 1;  // 0: a bucket
        // Paused anywhere from just past the hole's place to before the last block.
        for (size_t pause = block_of_hole; pause < blocks; ++pause) {
          cases.push_back(RaceCase{blocks, last_pairs, hole, pause});
        }
      }
    }
  }
  return cases;
}

class LookupRaceTest : public ::testing::TestWithParam<std::string> {};

// `count` keys that share a home bucket at least 4 buckets away from every home in
// `used` (so cases never share buckets or make a way for displacement).
std::vector<std::string> KeysSharingAHome(const ShardMap& map, const std::string& prefix,
                                          size_t count, std::vector<Home>& used) {
  for (int attempt = 0;; ++attempt) {
    const std::string first = absl::StrCat(prefix, "-", attempt, "-0");
    const Home home = map.Locate(HashKey(first));
    bool clear = true;
    for (const Home& u : used) {
      const int64_t gap = int64_t{home.bucket} - int64_t{u.bucket};
      if (u.shard == home.shard && gap > -4 && gap < 4) clear = false;
    }
    if (!clear) continue;
    used.push_back(home);
    std::vector<std::string> keys = {first};
    for (int i = 1; keys.size() < count; ++i) {
      const std::string key = absl::StrCat(prefix, "-", attempt, "-", i);
      const Home h = map.Locate(HashKey(key));
      if (h.shard == home.shard && h.bucket == home.bucket) keys.push_back(key);
    }
    return keys;
  }
}

// The object reads a lookup of `key` (present) takes on node 1, thread 0.
absl::StatusOr<uint64_t> ReadsToFind(KvCluster& kv, const std::string& key) {
  return kv.kv().Run<absl::StatusOr<uint64_t>>(1, 0, [key](KvClient& client, auto finish) {
    TableClient& c = dynamic_cast<TableClient&>(client);
    const uint64_t before = c.reader().stats().reads;
    c.Get(key, [&c, before, finish = std::move(finish)](
                   absl::StatusOr<std::optional<absl::string_view>> r) mutable {
      if (!r.ok()) return finish(r.status());
      if (!r->has_value()) return finish(absl::NotFoundError("the key is not there"));
      finish(c.reader().stats().reads - before);
    });
  });
}

// Three nodes with an H = 2 table (one slot per bucket: chains form at once).
std::unique_ptr<KvCluster> StartH2(const std::string& backend, const std::string& name,
                                   uint64_t buckets_per_node) {
  TableOptions options;
  options.layout.neighbourhood = 2;
  options.buckets_per_node = buckets_per_node;
  absl::StatusOr<std::unique_ptr<KvCluster>> started = KvCluster::Start(backend, 3, name, options);
  EXPECT_TRUE(started.ok()) << started.status();
  return started.ok() ? std::move(*started) : nullptr;
}

TEST_P(LookupRaceTest, ALookupFindsThePairARemoveMovedBehindIt) {
  std::unique_ptr<KvCluster> started = StartH2(GetParam(), "kv_lookup_race", 1024);
  ASSERT_NE(started, nullptr);
  KvCluster& kv = *started;
  std::vector<Home> used;
  int case_number = 0;
  for (const RaceCase& rc : Cases()) {
    SCOPED_TRACE(rc.Name());
    const uint32_t pairs = 2 + 2 * (rc.blocks - 1) + rc.last_pairs;
    const std::vector<std::string> keys =
        KeysSharingAHome(kv.client_as<TableClient>(1).map(), absl::StrCat("race", case_number++), pairs, used);
    for (const std::string& key : keys)
      ASSERT_TRUE(kv.Put(1 + case_number % 3, key, "v:" + key).ok());
    const std::string& moved = keys.back();  // Erase moves the chain's last pair
    // The layout the case assumes: the last pair is found in the chain's last block.
    absl::StatusOr<uint64_t> reads = ReadsToFind(kv, moved);
    ASSERT_TRUE(reads.ok()) << reads.status();
    ASSERT_EQ(*reads, 1 + rc.blocks);
    const std::string& removed = keys[rc.hole];
    auto remove_result =
        std::make_shared<absl::StatusOr<KeyOpResult>>(absl::UnknownError("not run"));
    auto restarts = std::make_shared<uint64_t>(0);
    using Result = absl::StatusOr<std::optional<std::string>>;
    Result found =
        kv.kv().Run<Result>(1, 0, [&, remove_result, restarts](KvClient& client, auto finish) {
          TableClient& c = dynamic_cast<TableClient&>(client);
          const uint64_t restarts_before = c.reader().stats().restarts;
          auto fired = std::make_shared<bool>(false);
          c.reader().SetBeforeBlockHookForTest([&c, &rc, &removed, remove_result, fired](
                                                   absl::string_view, size_t blocks_read,
                                                   absl::AnyInvocable<void()> resume) {
            if (*fired || blocks_read != rc.pause_at) return resume();
            *fired = true;
            c.Update(
                OpKind::kRemove, removed, "", 0,
                [remove_result, resume = std::move(resume)](absl::StatusOr<KeyOpResult> r) mutable {
                  *remove_result = std::move(r);
                  resume();
                });
          });
          c.Get(moved, [&c, restarts, restarts_before, finish = std::move(finish)](
                           absl::StatusOr<std::optional<absl::string_view>> r) mutable {
            c.reader().SetBeforeBlockHookForTest(nullptr);
            *restarts = c.reader().stats().restarts - restarts_before;
            if (!r.ok()) return finish(r.status());
            if (!r->has_value()) return finish(std::optional<std::string>());
            finish(std::optional<std::string>(std::string(**r)));
          });
        });
    ASSERT_TRUE(remove_result->ok()) << remove_result->status();
    ASSERT_TRUE((*remove_result)->existed) << "the remove ran at the seam";
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(*found, std::optional<std::string>("v:" + moved))
        << "the lookup of " << moved << " missed it (" << *restarts << " restarts)";
    // Every other key is still there, from every node; the removed one is gone.
    for (const std::string& key : keys) {
      for (NodeId on = 1; on <= 3; ++on) {
        absl::StatusOr<std::optional<std::string>> got = kv.Get(on, key);
        ASSERT_TRUE(got.ok()) << got.status();
        if (key == removed) {
          EXPECT_FALSE(got->has_value()) << key;
        } else {
          EXPECT_EQ(*got, std::optional<std::string>("v:" + key)) << key;
        }
      }
    }
  }
}

// One step of a transaction run by RunTxn: a put of `value`, or (nullopt) a remove of a
// key that must exist.
struct TxnStep {
  std::string key;
  std::optional<std::string> value;
};

// Runs the steps in one StoreTxn (as MULTI/EXEC does) on node 1 and commits.
absl::Status RunTxn(KvCluster& kv, std::vector<TxnStep> steps) {
  struct Run {
    std::shared_ptr<TableStore> store;
    std::unique_ptr<StoreTxn> txn;
    std::vector<TxnStep> steps;
    size_t next = 0;
    absl::AnyInvocable<void(absl::Status)> finish;
    void Step(std::shared_ptr<Run> self) {
      if (next == steps.size()) {
        return txn->Commit([self](absl::Status s) { self->finish(s); });
      }
      const TxnStep& step = steps[next++];
      if (step.value) {
        return txn->Put(step.key, *step.value, [self](absl::Status s) {
          if (!s.ok()) return self->finish(s);
          self->Step(self);
        });
      }
      txn->Remove(step.key, [self, key = step.key](absl::StatusOr<bool> existed) {
        if (!existed.ok()) return self->finish(existed.status());
        if (!*existed)
          return self->finish(absl::InternalError(absl::StrCat(key, " was not there")));
        self->Step(self);
      });
    }
  };
  return kv.kv().Run<absl::Status>(1, 0, [&steps](KvClient& c, auto finish) {
    auto run = std::make_shared<Run>();
    run->store = std::make_shared<TableStore>(c);
    run->txn = run->store->BeginTxn();
    run->steps = std::move(steps);
    run->finish = std::move(finish);
    run->Step(run);
  });
}

// A transaction (MULTI/EXEC) that grows a chain by a block and then removes a pair of
// the same chain: the new block is the chain's last, and a block the transaction
// allocated has no old names to retire (renaming it was refused before).
TEST_P(LookupRaceTest, ATransactionRemovesFromAChainItGrew) {
  std::unique_ptr<KvCluster> started = StartH2(GetParam(), "kv_grow_remove", 64);
  ASSERT_NE(started, nullptr);
  KvCluster& kv = *started;
  std::vector<Home> used;
  const std::vector<std::string> keys = KeysSharingAHome(kv.client_as<TableClient>(1).map(), "grow", 6, used);
  for (size_t i = 0; i < 4; ++i) ASSERT_TRUE(kv.Put(2, keys[i], "v:" + keys[i]).ok());
  absl::Status committed =
      RunTxn(kv, {{keys[4], "v:" + keys[4]}, {keys[5], "v:" + keys[5]}, {keys[0], std::nullopt}});
  ASSERT_TRUE(committed.ok()) << committed;
  for (size_t i = 0; i < keys.size(); ++i) {
    for (NodeId on = 1; on <= 3; ++on) {
      absl::StatusOr<std::optional<std::string>> got = kv.Get(on, keys[i]);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, i == 0 ? std::nullopt : std::optional<std::string>("v:" + keys[i]))
          << keys[i];
    }
  }
  // The pair from the new block moved into the home bucket; one block remains of two.
  absl::StatusOr<uint64_t> reads = ReadsToFind(kv, keys[4]);
  ASSERT_TRUE(reads.ok()) << reads.status();
  EXPECT_EQ(*reads, 3u);  // buckets, then both blocks: keys 2, 3 | key 4
}

// One transaction removing two pairs of one chain: the first remove renames blocks, the
// second walks the chain again through the new names (a transaction sees its own renames;
// it used to fail with "was read by this transaction as").
TEST_P(LookupRaceTest, ATransactionRemovesTwoPairsOfOneChain) {
  std::unique_ptr<KvCluster> started = StartH2(GetParam(), "kv_remove_two", 64);
  ASSERT_NE(started, nullptr);
  KvCluster& kv = *started;
  std::vector<Home> used;
  const std::vector<std::string> keys = KeysSharingAHome(kv.client_as<TableClient>(1).map(), "two", 7, used);
  for (const std::string& key : keys) ASSERT_TRUE(kv.Put(2, key, "v:" + key).ok());
  // Bucket, next bucket, then blocks [2, 3] [4, 5] [6]: remove 0 (renames all three
  // blocks, frees the last), then 3.
  absl::Status committed = RunTxn(kv, {{keys[0], std::nullopt}, {keys[3], std::nullopt}});
  ASSERT_TRUE(committed.ok()) << committed;
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::StatusOr<std::optional<std::string>> got = kv.Get(3, keys[i]);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, i == 0 || i == 3 ? std::nullopt : std::optional<std::string>("v:" + keys[i]))
        << keys[i];
  }
}

// The table scan (DBSIZE, INFO) walks chains with pointers read at different times,
// like a lookup: while removes rename and free blocks under it, it reads the bucket
// again instead of failing.
TEST_P(LookupRaceTest, ScansNeverFailWhileRemovesReshuffleChains) {
  // 2 buckets per node, 3 home buckets: every chain is long.
  std::unique_ptr<KvCluster> started = StartH2(GetParam(), "kv_scan_churn", 2);
  ASSERT_NE(started, nullptr);
  KvCluster& kv = *started;
  constexpr int kKeys = 40;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(kv.Put(1, absl::StrCat("k", i), "v").ok());
  // Node 1 removes and puts back keys, 8 at a time, until told to stop.
  struct Churn {
    KvClient* c;
    std::atomic<bool> stop{false};
    std::atomic<int> in_flight{0};
    std::atomic<uint64_t> updates{0};
    absl::Status error;  // owned by node 1's thread until in_flight is 0
    void Go(int i) {
      if (stop.load()) return void(in_flight.fetch_sub(1));
      const OpKind kind = (i / kKeys) % 2 == 0 ? OpKind::kRemove : OpKind::kPut;
      c->Update(kind, absl::StrCat("k", i % kKeys), "v", 0,
                [this, i](absl::StatusOr<KeyOpResult> r) {
                  if (error.ok() && !r.ok()) error = r.status();
                  updates.fetch_add(1);
                  Go(i + 8);
                });
    }
  };
  Churn churn{&kv.client(1)};
  churn.in_flight = 8;
  kv.host(1).context(0).Post([&churn] {
    for (int i = 0; i < 8; ++i) churn.Go(i);
  });
  int scans = 0;
  absl::Status scan_error;
  while ((churn.updates.load() < 2000 || scans < 20) && scan_error.ok()) {
    absl::StatusOr<TableScan> scan = kv.Scan(2);
    if (!scan.ok()) {
      scan_error = absl::Status(scan.status().code(),
                                absl::StrCat("scan ", scans, " after ", churn.updates.load(),
                                             " updates: ", scan.status().message()));
    }
    ++scans;
  }
  churn.stop = true;
  while (churn.in_flight.load() > 0) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(scan_error.ok()) << scan_error;
  EXPECT_TRUE(churn.error.ok()) << churn.error;
}

INSTANTIATE_TEST_SUITE_P(Backends, LookupRaceTest,
                         ::testing::ValuesIn(farm::testing::TestBackends()));

}  // namespace
}  // namespace farm::kv
