// The cuckoo (Nessie) layout's MIGRATE, with interleavings forced through its test seam
// (CuckooOps::set_migration_hook): a PUT on node 1 thread 0 into a tiny 2-way index
// displaces pairs, and every migration pauses after each of its two index CASes while
// readers on the other nodes look the migrating pair (and every other live pair) up.
//
//   after the destination CAS (the copy is in, invalid; the source still names the valid
//   old entry): every reader gets the pair's value at once.
//   after the source CAS (only the invalid copy names the pair): a reader must neither
//   answer "absent" nor an old value: it backs off until the migration validates the
//   copy, then answers the value.
//
// Repeated over 3 x 300 PUTs and removes (three fixed seeds), on every backend. Also: a
// full index answers ResourceExhausted, and BeginTxn answers Unimplemented.
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kv/cuckoo/cuckoo_client.h"
#include "kv/cuckoo/cuckoo_txn.h"
#include "tests/kv/kv_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv {
namespace {

using cuckoo::CuckooClient;
using cuckoo::MigrationStep;
using testing::KvCluster;

// What the hook and the PUT's continuation report to the test thread, in order.
struct Events {
  struct Pause {
    MigrationStep step;
    std::string key;
    absl::AnyInvocable<void()> resume;
  };
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Pause> pauses;
  std::optional<absl::StatusOr<KeyOpResult>> put_done;

  // The next pause, or nullopt once the PUT completed with no pause left.
  std::optional<Pause> Next() {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait(lock, [&] { return !pauses.empty() || put_done.has_value(); });
    if (pauses.empty()) return std::nullopt;
    Pause p = std::move(pauses.front());
    pauses.pop_front();
    return p;
  }
};

class CuckooMigrationTest : public ::testing::TestWithParam<std::string> {
 protected:
  // 3 nodes x 2 index slots, 2 ways: most inserts displace a pair.
  std::unique_ptr<KvCluster> Start(const std::string& name,
                                   const std::string& layout = "cuckoo:N=2,I=1,D=3") {
    TableOptions options;
    options.layout.neighbourhood = 4;  // 2 pairs of capacity per bucket
    options.buckets_per_node = 1;
    absl::StatusOr<std::unique_ptr<KvCluster>> kv =
        KvCluster::Start(GetParam(), 3, name, KvTableOptions{layout, options});
    EXPECT_TRUE(kv.ok()) << kv.status();
    return kv.ok() ? std::move(*kv) : nullptr;
  }
};

absl::Status SetHook(KvCluster& kv, std::shared_ptr<Events> events) {
  return kv.kv().Run<absl::Status>(1, 0, [events](KvClient& c, auto finish) {
    dynamic_cast<CuckooClient&>(c).ops().set_migration_hook(
        [events](MigrationStep step, absl::string_view key, absl::AnyInvocable<void()> resume) {
          std::lock_guard<std::mutex> lock(events->mu);
          events->pauses.push_back(Events::Pause{step, std::string(key), std::move(resume)});
          events->changed.notify_all();
        });
    finish(absl::OkStatus());
  });
}

TEST_P(CuckooMigrationTest, ReadersNeverMissOrMisreadAPairBeingMigrated) {
  std::unique_ptr<KvCluster> kv = Start("cuckoo_migrate");
  ASSERT_NE(kv, nullptr);
  int paused_migrations = 0, full = 0;
  for (uint32_t seed : {20261125u, 7u, 1234567u}) {
    std::mt19937 rng(seed);
    std::map<std::string, std::string> live;  // the model: every key's value
    for (int round = 0; round < 300; ++round) {
      SCOPED_TRACE(absl::StrCat("seed ", seed, ", round ", round));
      // Keep at most 4 pairs in the 6 slots: remove one (from node 2, no hook there).
      while (live.size() >= 4) {
        auto it = std::next(live.begin(), rng() % live.size());
        ASSERT_EQ(*kv->Remove(2, it->first), true) << it->first;
        ASSERT_FALSE(kv->Get(3, it->first)->has_value()) << "a removed pair is gone at once";
        live.erase(it);
      }
      std::string key = absl::StrCat("s", seed, "-key-", rng() % 12);
      const std::string value = absl::StrCat(key, "=v", round);
      auto events = std::make_shared<Events>();
      ASSERT_TRUE(SetHook(*kv, events).ok());
      kv->host(1).context(0).Post([c = &kv->client(1, 0), events, key, value] {
        c->Update(OpKind::kPut, key, value, 0, [events](absl::StatusOr<KeyOpResult> r) {
          std::lock_guard<std::mutex> lock(events->mu);
          events->put_done = std::move(r);
          events->changed.notify_all();
        });
      });
      while (std::optional<Events::Pause> pause = events->Next()) {
        ASSERT_TRUE(live.count(pause->key)) << "only live pairs migrate: " << pause->key;
        const std::string& expected = live[pause->key];
        if (pause->step == MigrationStep::kDestinationInstalled) {
          // The source still names the valid entry: every reader answers at once.
          for (NodeId on = 2; on <= 3; ++on) {
            absl::StatusOr<std::optional<std::string>> got = kv->Get(on, pause->key);
            ASSERT_TRUE(got.ok()) << got.status();
            ASSERT_TRUE(got->has_value()) << pause->key << " missed with its copy installed";
            EXPECT_EQ(**got, expected);
          }
          for (const auto& [k, v] : live) EXPECT_EQ(**kv->Get(2 + (k.size() % 2), k), v) << k;
          kv->host(1).context(0).Post(std::move(pause->resume));
          continue;
        }
        // Only the invalid copy names the pair: a lookup waits for the migration.
        ++paused_migrations;
        auto lookup = std::make_shared<Events>();
        kv->host(3).context(1).Post([c = &kv->client(3, 1), lookup, k = pause->key] {
          c->Get(k, [lookup](absl::StatusOr<std::optional<absl::string_view>> r) {
            std::lock_guard<std::mutex> lock(lookup->mu);
            KeyOpResult answer;
            if (!r.ok()) {
              answer.status = r.status();
            } else {
              answer.existed = r->has_value();
              if (r->has_value())
                answer.status = absl::InternalError(std::string(**r));  // carries the value
            }
            lookup->put_done = answer;
            lookup->changed.notify_all();
          });
        });
        {
          std::unique_lock<std::mutex> lock(lookup->mu);
          EXPECT_FALSE(lookup->changed.wait_for(lock, std::chrono::milliseconds(30),
                                                [&] { return lookup->put_done.has_value(); }))
              << "a lookup answered while only an invalid copy named " << pause->key;
        }
        kv->host(1).context(0).Post(std::move(pause->resume));
        ASSERT_FALSE(lookup->Next().has_value());
        const KeyOpResult& answer = **lookup->put_done;
        ASSERT_TRUE(answer.existed)
            << pause->key << " answered absent during its migration: " << answer.status;
        EXPECT_EQ(answer.status.message(), expected);
      }
      const absl::StatusOr<KeyOpResult>& put = *events->put_done;
      if (!put.ok() && put.status().code() == absl::StatusCode::kResourceExhausted) {
        ++full;  // no slot within D displacements: the pair is not in
        EXPECT_EQ(kv->Get(2, key)->has_value(), live.count(key) > 0);
        continue;
      }
      ASSERT_TRUE(put.ok()) << put.status();
      EXPECT_EQ(put->existed, live.count(key) > 0);
      live[key] = value;
      for (const auto& [k, v] : live) ASSERT_EQ(**kv->Get(1 + (round % 3), k), v) << k;
    }
    for (const auto& [k, v] : live)
      ASSERT_EQ(*kv->Remove(3, k), true) << k;  // the next seed starts empty
  }
  std::printf("%d migrations paused and checked, %d puts found the index full\n", paused_migrations,
              full);
  EXPECT_GE(paused_migrations, 60);
}

TEST_P(CuckooMigrationTest, AFullIndexIsResourceExhaustedAndTransactionsAreUnimplemented) {
  std::unique_ptr<KvCluster> kv = Start("cuckoo_full", "cuckoo:N=2,I=1,D=1");
  ASSERT_NE(kv, nullptr);
  int stored = 0;
  absl::Status last;
  for (int i = 0; i < 40 && last.ok(); ++i) {
    last = kv->Put(1 + i % 3, absl::StrCat("k", i), "v");
    if (last.ok()) ++stored;
  }
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_LE(stored, 6) << "6 index slots";
  for (int i = 0; i < stored; ++i) EXPECT_EQ(**kv->Get(2, absl::StrCat("k", i)), "v");
  absl::Status txn = kv->kv().Run<absl::Status>(1, 0, [](KvClient& c, auto finish) {
    std::shared_ptr<StoreTxn> t = c.BeginTxn();
    t->Put("a", "b", [t, finish = std::move(finish)](absl::Status s) mutable { finish(s); });
  });
  EXPECT_EQ(txn.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(txn.message(), cuckoo::kUnimplementedTxn);
}

INSTANTIATE_TEST_SUITE_P(Backends, CuckooMigrationTest,
                         ::testing::ValuesIn(farm::testing::TestBackends()));

}  // namespace
}  // namespace farm::kv
