// The chained layout (kv/chained) while its partitions expand: a deterministic seam (the
// expander's hold hook) stops an expansion between two buckets, and lookups, updates,
// inserts, removes and scans run against the half-migrated table from every node; then
// concurrent readers and writers on every node while automatic expansions double the
// table several times: readers never see a value that was not written for their key
// nor miss a key present throughout, and the final contents equal a model. Mid-expansion
// writes go through shipped updates and through transactions (BeginTxn).
// A scan from a stale view of a partition (an expansion ended or began since its root
// was READ) walks the partition again and counts what a fresh scan counts.
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/coro.h"
#include "gtest/gtest.h"
#include "kv/chained/chained_client.h"
#include "kv/chained/chained_node.h"
#include "kv/chained/table_scan.h"
#include "kv/store.h"
#include "tests/kv/kv_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv {
namespace {

using testing::KvCluster;

// The hold hook's state: an expansion that reaches bucket `pause_at` of any partition
// waits there until `release`.
struct Gate {
  std::atomic<int64_t> pause_at{-1};
  std::atomic<bool> paused{false};
  std::atomic<bool> release{false};
};

std::string ValueFor(const std::string& key, uint64_t gen) {
  std::string v = absl::StrCat(key, ":", gen, ":");
  // Every fourth generation out of line (over 32 B), some of them large.
  const size_t pad = gen % 4 == 0 ? 60 + gen % 300 : gen % 7;
  v.append(pad, static_cast<char>('a' + gen % 26));
  return v;
}

// The sum of every node's expansion stats.
chained::ExpansionStats Expansions(KvCluster& kv) {
  chained::ExpansionStats sum;
  for (NodeId id = 1; id <= static_cast<NodeId>(kv.kv().size()); ++id) {
    auto& node = dynamic_cast<chained::ChainedNode&>(kv.kv().table(id));
    const chained::ExpansionStats s = node.host().expander()->stats();
    sum.expansions += s.expansions;
    sum.migrated += s.migrated;
    sum.retries += s.retries;
    sum.freed_tables += s.freed_tables;
  }
  return sum;
}

// The sum of every node's thread-0 reader figures (read on that thread).
chained::ChainStats ReaderStats(KvCluster& kv) {
  chained::ChainStats sum;
  for (NodeId id = 1; id <= static_cast<NodeId>(kv.kv().size()); ++id) {
    absl::StatusOr<chained::ChainStats> s = kv.kv().Run<absl::StatusOr<chained::ChainStats>>(
        id, 0, [](KvClient& c, auto finish) { finish(dynamic_cast<chained::ChainedClient&>(c).reader().chain_stats()); });
    if (!s.ok()) continue;
    sum.head_reads += s->head_reads;
    sum.block_reads += s->block_reads;
    sum.recheck_reads += s->recheck_reads;
    sum.value_reads += s->value_reads;
    sum.root_reads += s->root_reads;
    sum.next_table += s->next_table;
  }
  return sum;
}

void ExpectContents(KvCluster& kv, const std::map<std::string, std::string>& model,
                    const std::vector<std::string>& absent, const std::string& when) {
  for (const auto& [key, value] : model) {
    for (NodeId on = 1; on <= 3; ++on) {
      absl::StatusOr<std::optional<std::string>> got = kv.Get(on, key);
      ASSERT_TRUE(got.ok()) << when << ": " << got.status();
      ASSERT_TRUE(got->has_value()) << when << ": " << key << " missing on node " << on;
      ASSERT_EQ(**got, value) << when << ": " << key << " on node " << on;
    }
  }
  for (const std::string& key : absent) {
    absl::StatusOr<std::optional<std::string>> got = kv.Get(1 + key.size() % 3, key);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_FALSE(got->has_value()) << when << ": " << key << " was removed";
  }
}

// Puts key -> value and reads it back in one transaction (BeginTxn), retried while it
// conflicts (e.g. with a bucket's migration).
absl::Status PutInTxn(KvCluster& kv, NodeId on, const std::string& key, const std::string& value) {
  absl::Status s;
  for (int attempt = 0; attempt < 100; ++attempt) {
    s = kv.kv().Run<absl::Status>(on, 0, [key, value](KvClient& c, auto finish) {
      std::shared_ptr<StoreTxn> txn = c.BeginTxn();
      txn->Put(key, value, [txn, key, value, finish = std::move(finish)](absl::Status put) mutable {
        if (!put.ok()) return finish(put);
        txn->Get(key, [txn, value, finish = std::move(finish)](absl::StatusOr<std::optional<std::string>> r) mutable {
          if (!r.ok()) return finish(r.status());
          if (!r->has_value() || **r != value) return finish(absl::InternalError("the transaction misread its put"));
          txn->Commit([txn, finish = std::move(finish)](absl::Status done) mutable { finish(done); });
        });
      });
    });
    if (s.code() != absl::StatusCode::kAborted) return s;
  }
  return s;
}

// Partition 0 counted by ScanPartition from `view` (none: from its root).
Task<absl::StatusOr<TableScan>> ScanPartitionZero(Context& ctx, chained::ChainedReader& reader,
                                                  chained::ChainedTable table,
                                                  std::optional<chained::PartitionView> view) {
  TableScan scan;
  if (absl::Status s = co_await chained::ScanPartition(ctx, reader, table, 0, std::move(view), scan); !s.ok()) {
    co_return s;
  }
  co_return scan;
}

// A table that expands only when asked, whose expansions wait at bucket
// `gate->pause_at` of any partition until `gate->release`.
KvTableOptions HeldTableOptions(const std::shared_ptr<Gate>& gate) {
  KvTableOptions options;
  options.layout = "chained:B=4,expand=off";
  options.chained_hold = [gate](uint32_t, uint64_t bucket, uint64_t) {
    if (static_cast<int64_t>(bucket) != gate->pause_at.load()) return false;
    gate->paused = true;
    return !gate->release.load();
  };
  return options;
}

// One expansion of partition `p`, run from a thread of its own on worker thread 1 of the
// partition's owner, held at bucket `hold_at` by the gate (-1: never held). Destroying
// it releases the expansion and waits for its end.
class Expansion {
 public:
  Expansion(KvCluster& kv, Gate& gate, uint32_t p, int64_t hold_at) : gate_(gate) {
    gate.paused = false;
    gate.release = false;
    gate.pause_at = hold_at;
    const NodeId owner = kv.client_as<chained::ChainedClient>(1).table().map->partition(p).owner;
    auto& node = dynamic_cast<chained::ChainedNode&>(kv.kv().table(owner));
    thread_ = std::thread([this, &kv, &node, owner, p] {
      status_ = kv.kv().Run<absl::Status>(
          owner, 1, [&node, p](KvClient& c, auto finish) { node.host().expander()->Expand(c.ctx(), p, std::move(finish)); },
          absl::Seconds(120));
    });
  }
  Expansion(const Expansion&) = delete;
  Expansion& operator=(const Expansion&) = delete;
  ~Expansion() { (void)Finish(); }

  // Whether the expansion reached the bucket it is held at (waits up to 60 s).
  bool WaitHeld() const {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (!gate_.paused.load() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
    return gate_.paused.load();
  }
  // Releases the expansion and waits for it to end: its status.
  absl::Status Finish() {
    gate_.release = true;
    return Join();
  }
  // Waits for the expansion to end without releasing it (something else must end it).
  absl::Status Join() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  Gate& gate_;
  absl::Status status_ = absl::UnknownError("not run");
  std::thread thread_;
};

class ChainedExpansionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ChainedExpansionTest, OperationsMidExpansionSeeTheRightTable) {
  auto gate = std::make_shared<Gate>();
  absl::StatusOr<std::unique_ptr<KvCluster>> started =
      KvCluster::Start(GetParam(), 3, "chained_mid", HeldTableOptions(gate));
  ASSERT_TRUE(started.ok()) << started.status();
  KvCluster& kv = **started;
  const chained::ChainedTable& table = kv.client_as<chained::ChainedClient>(1).table();
  const size_t partitions = table.map->size();

  std::map<std::string, std::string> model;
  std::vector<std::string> absent;
  for (int i = 0; i < 120; ++i) {
    const std::string key = absl::StrCat("key-", i);
    model[key] = ValueFor(key, i);
    ASSERT_TRUE(kv.Put(1 + i % 3, key, model[key]).ok()) << key;
  }
  ExpectContents(kv, model, absent, "before expanding");
  uint64_t gen = 1000;
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    for (uint32_t p = 0; p < partitions; ++p) {
      const chained::Partition& part = table.map->partition(p);
      const uint64_t n = part.initial->buckets() << round;
      SCOPED_TRACE(absl::StrCat("round ", round, ", partition ", p, " of ", n, " buckets"));
      Expansion expansion(kv, *gate, p, static_cast<int64_t>(n / 2));
      ASSERT_TRUE(expansion.WaitHeld()) << "the expansion never reached bucket " << n / 2;

      // Half the partition's buckets are in the new table, half in the old.
      absl::StatusOr<TableScan> mid = kv.Scan(2);
      ASSERT_TRUE(mid.ok()) << mid.status();
      EXPECT_EQ(mid->expanding, 1u);
      EXPECT_EQ(mid->pairs, model.size());
      ExpectContents(kv, model, absent, "mid-expansion");
      // Updates, removes and inserts against both halves, from every node.
      int i = 0;
      for (auto it = model.begin(); it != model.end(); ++i) {
        const std::string key = it->first;
        if (i % 7 == round) {
          ASSERT_EQ(*kv.Remove(1 + i % 3, key), true) << key;
          absent.push_back(key);
          it = model.erase(it);
          continue;
        }
        if (i % 3 == 0) {
          it->second = ValueFor(key, ++gen);
          ASSERT_TRUE(kv.Put(1 + i % 3, key, it->second).ok()) << key;
        }
        ++it;
      }
      for (int j = 0; j < 30; ++j) {
        const std::string key = absl::StrCat("new-", round, "-", p, "-", j);
        model[key] = ValueFor(key, ++gen);
        ASSERT_TRUE(kv.Put(1 + j % 3, key, model[key]).ok()) << key;
      }
      for (int j = 0; j < 6; ++j) {  // and through transactions (MULTI/EXEC's path)
        const std::string key = absl::StrCat("txn-", round, "-", p, "-", j);
        model[key] = ValueFor(key, ++gen);
        ASSERT_TRUE(PutInTxn(kv, 1 + j % 3, key, model[key]).ok()) << key;
      }
      std::erase_if(absent, [&](const std::string& k) { return model.count(k) > 0; });
      ExpectContents(kv, model, absent, "mid-expansion, after updates");
      mid = kv.Scan(3);
      ASSERT_TRUE(mid.ok()) << mid.status();
      EXPECT_EQ(mid->pairs, model.size());

      const absl::Status expanded = expansion.Finish();
      ASSERT_TRUE(expanded.ok()) << expanded;
      ExpectContents(kv, model, absent, "after the expansion");
    }
  }
  const chained::ExpansionStats stats = Expansions(kv);
  EXPECT_EQ(stats.expansions, kRounds * partitions);
  EXPECT_EQ(stats.freed_tables, (kRounds - 1) * partitions) << "every table but the initial one is freed";
  absl::StatusOr<TableScan> end = kv.Scan(1);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->pairs, model.size());
  EXPECT_EQ(end->expanding, 0u);
  // The lookups took every path: heads moved to the next table, stale views refreshed,
  // chains followed and rechecked.
  const chained::ChainStats reads = ReaderStats(kv);
  EXPECT_GT(reads.next_table, 0u);
  EXPECT_GT(reads.root_reads, 0u);
  EXPECT_GT(reads.block_reads, 0u);
  EXPECT_GT(reads.recheck_reads, 0u);
  std::printf("reader (thread 0 of each node): %llu head READs, %llu via a moved head, %llu block READs, %llu "
              "rechecks, %llu root/directory READs\n",
              static_cast<unsigned long long>(reads.head_reads), static_cast<unsigned long long>(reads.next_table),
              static_cast<unsigned long long>(reads.block_reads), static_cast<unsigned long long>(reads.recheck_reads),
              static_cast<unsigned long long>(reads.root_reads));
  std::printf("%zu partitions, %llu buckets migrated, %llu retried; %llu pairs in %llu buckets in use, "
              "%llu overflow blocks\n",
              partitions, static_cast<unsigned long long>(stats.migrated),
              static_cast<unsigned long long>(stats.retries), static_cast<unsigned long long>(end->pairs),
              static_cast<unsigned long long>(end->buckets_in_use),
              static_cast<unsigned long long>(end->overflow_blocks));
}

TEST_P(ChainedExpansionTest, ConcurrentReadersAndWritersWhileTheTableDoubles) {
  // Random short holds between buckets (a quarter of the polls hold on), so lookups and
  // updates keep meeting half-migrated buckets.
  auto polls = std::make_shared<std::atomic<uint64_t>>(0);
  KvTableOptions options;
  options.layout = "chained:B=1";
  options.chained_hold = [polls](uint32_t, uint64_t, uint64_t) {
    const uint64_t x = polls->fetch_add(1) * 0x9e3779b97f4a7c15ull;
    return (x >> 61) < 2;
  };
  absl::StatusOr<std::unique_ptr<KvCluster>> started = KvCluster::Start(GetParam(), 3, "chained_stress", options);
  ASSERT_TRUE(started.ok()) << started.status();
  KvCluster& kv = **started;
  const bool shm = GetParam() == "shm";
  const int kStable = 40;
  const int kKeysPerWriter = shm ? 400 : 200;

  // Keys present throughout: inserted first, only overwritten afterwards.
  for (int i = 0; i < kStable; ++i) {
    const std::string key = absl::StrCat("stable-", i);
    ASSERT_TRUE(kv.Put(1 + i % 3, key, ValueFor(key, 0)).ok());
  }
  std::atomic<bool> writing{true};
  std::atomic<int> bad{0};
  std::vector<std::map<std::string, std::optional<std::string>>> models(3);
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(w + 1);
      std::map<std::string, std::optional<std::string>>& model = models[w];
      for (int j = 0; j < kKeysPerWriter; ++j) {
        const std::string key = absl::StrCat("w", w, "-", j);
        const NodeId on = 1 + (w + j) % 3;
        std::string value = ValueFor(key, j);
        if (!kv.Put(on, key, value).ok()) ++bad;
        model[key] = value;
        if (rng() % 4 == 0) {  // overwrite an earlier key, or remove it
          const std::string old = absl::StrCat("w", w, "-", rng() % (j + 1));
          if (rng() % 3 == 0) {
            if (!kv.Remove(on, old).ok()) ++bad;
            model[old] = std::nullopt;
          } else {
            value = ValueFor(old, 100000 + j);
            if (!kv.Put(on, old, value).ok()) ++bad;
            model[old] = value;
          }
        }
        if (w == 0 && j % 5 == 0) {
          const std::string key = absl::StrCat("stable-", rng() % kStable);
          if (!kv.Put(on, key, ValueFor(key, 200000 + j)).ok()) ++bad;
        }
      }
    });
  }
  std::atomic<uint64_t> lookups{0};
  std::vector<std::string> errors;
  Mutex errors_mu;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937 rng(100 + r);
      while (writing.load()) {
        const bool stable = rng() % 2 == 0;
        const std::string key =
            stable ? absl::StrCat("stable-", rng() % kStable) : absl::StrCat("w", rng() % 3, "-", rng() % kKeysPerWriter);
        absl::StatusOr<std::optional<std::string>> got = kv.Get(1 + r, key);
        lookups.fetch_add(1);
        std::string error;
        if (!got.ok()) {
          error = absl::StrCat(key, ": ", got.status().ToString());
        } else if (stable && !got->has_value()) {
          error = absl::StrCat(key, " (present throughout) was missing");
        } else if (got->has_value() && !absl::StartsWith(**got, key + ":")) {
          error = absl::StrCat(key, " had a value never written for it: ", (*got)->substr(0, 40));
        }
        if (!error.empty()) {
          MutexLock lock(&errors_mu);
          errors.push_back(error);
        }
      }
    });
  }
  for (int w = 0; w < 3; ++w) threads[w].join();
  writing = false;
  for (size_t t = 3; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(bad.load(), 0) << "updates failed";
  EXPECT_TRUE(errors.empty()) << errors.size() << " bad lookups, the first: " << errors.front();
  EXPECT_GT(lookups.load(), 100u);

  // Wait for expansions still running, then compare with the model.
  for (int i = 0; i < 6000; ++i) {
    absl::StatusOr<TableScan> s = kv.Scan(1);
    ASSERT_TRUE(s.ok()) << s.status();
    if (s->expanding == 0) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  std::map<std::string, std::string> present;
  std::vector<std::string> removed;
  for (const auto& model : models) {
    for (const auto& [key, value] : model) {
      if (value.has_value()) {
        present[key] = *value;
      } else {
        removed.push_back(key);
      }
    }
  }
  ExpectContents(kv, present, removed, "after the writers");
  absl::StatusOr<TableScan> end = kv.Scan(2);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->pairs, present.size() + kStable);
  const chained::ExpansionStats stats = Expansions(kv);
  EXPECT_GE(stats.expansions, 3 * kv.client_as<chained::ChainedClient>(1).table().map->size())
      << "each partition doubled at least three times";
  std::printf("%llu lookups; %llu expansions, %llu buckets migrated (%llu retried); %llu pairs, %.2f per bucket "
              "in use, %llu overflow blocks, longest chain %llu blocks\n",
              static_cast<unsigned long long>(lookups.load()), static_cast<unsigned long long>(stats.expansions),
              static_cast<unsigned long long>(stats.migrated), static_cast<unsigned long long>(stats.retries),
              static_cast<unsigned long long>(end->pairs),
              end->buckets_in_use ? double(end->pairs) / double(end->buckets_in_use) : 0.0,
              static_cast<unsigned long long>(end->overflow_blocks),
              static_cast<unsigned long long>(end->longest_chain));
}

TEST_P(ChainedExpansionTest, AScanFromAStaleViewWalksThePartitionAgain) {
  // A scan READs a partition's root, then walks the tables it names; an expansion can
  // end in between (or start). Forced here by handing ScanPartition views taken before
  // an expansion and in its middle, once it has ended: the initial table, never freed,
  // with every head moved and no next table named; a later table freed (its heads fail
  // their READs). Each walk from a stale view must count what a fresh one counts.
  auto gate = std::make_shared<Gate>();
  absl::StatusOr<std::unique_ptr<KvCluster>> started =
      KvCluster::Start(GetParam(), 3, "chained_stale", HeldTableOptions(gate));
  ASSERT_TRUE(started.ok()) << started.status();
  KvCluster& kv = **started;
  for (int i = 0; i < 80; ++i) {
    const std::string key = absl::StrCat("key-", i);
    ASSERT_TRUE(kv.Put(1 + i % 3, key, ValueFor(key, i)).ok()) << key;
  }
  auto view_now = [&kv]() {
    return kv.kv().Run<absl::StatusOr<chained::PartitionView>>(1, 0, [](KvClient& c, auto finish) {
      Spawn(dynamic_cast<chained::ChainedClient&>(c).reader().Refresh(0), std::move(finish));
    });
  };
  auto scan_from = [&kv](std::optional<chained::PartitionView> view) {
    return kv.kv().Run<absl::StatusOr<TableScan>>(1, 0, [view](KvClient& c, auto finish) {
      auto& client = dynamic_cast<chained::ChainedClient&>(c);
      Spawn(ScanPartitionZero(c.ctx(), client.reader(), client.table(), view), std::move(finish));
    });
  };
  auto expect_like_fresh = [&](std::optional<chained::PartitionView> view, const std::string& which) {
    SCOPED_TRACE(which);
    absl::StatusOr<TableScan> fresh = scan_from(std::nullopt);
    absl::StatusOr<TableScan> stale = scan_from(std::move(view));
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    ASSERT_TRUE(stale.ok()) << stale.status();
    EXPECT_GT(fresh->pairs, 0u);
    EXPECT_EQ(stale->pairs, fresh->pairs);
    EXPECT_EQ(stale->pairs_in_buckets, fresh->pairs_in_buckets);
    EXPECT_EQ(stale->bucket_slots, fresh->bucket_slots);
    EXPECT_EQ(stale->buckets_in_use, fresh->buckets_in_use);
    EXPECT_EQ(stale->memory_bytes, fresh->memory_bytes);
    EXPECT_EQ(stale->expanding, fresh->expanding);
  };
  // The initial table T0 -> T1; T0 stays allocated, every head moved.
  absl::StatusOr<chained::PartitionView> before = view_now();
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->next, nullptr);
  ASSERT_TRUE(Expansion(kv, *gate, 0, -1).Finish().ok());
  expect_like_fresh(*before, "a view from before the expansion (the initial table, all moved)");

  // T1 -> T2, held halfway: a view naming both, then T1 freed once the expansion ends.
  before = view_now();
  ASSERT_TRUE(before.ok()) << before.status();
  const uint64_t n = before->current->buckets();
  std::optional<chained::PartitionView> mid;
  {
    Expansion expansion(kv, *gate, 0, static_cast<int64_t>(n / 2));
    ASSERT_TRUE(expansion.WaitHeld()) << "the expansion never reached bucket " << n / 2;
    absl::StatusOr<chained::PartitionView> v = view_now();
    ASSERT_TRUE(v.ok()) << v.status();
    ASSERT_NE(v->next, nullptr);
    expect_like_fresh(*v, "a view from the expansion's middle, while it is held");
    mid = *v;
    const absl::Status expanded = expansion.Finish();
    ASSERT_TRUE(expanded.ok()) << expanded;
  }
  ASSERT_EQ(Expansions(kv).freed_tables, 1u) << "the table before the last expansion is freed";
  expect_like_fresh(*before, "a view from before the expansion (a freed table)");
  ASSERT_TRUE(mid.has_value());
  expect_like_fresh(*mid, "a view from the expansion's middle (a freed current table)");
}

TEST_P(ChainedExpansionTest, DestroyingTheTableEndsARunningExpansion) {
  // The table goes (the KvTable's destructor, the node still running) while an
  // expansion is held between two buckets: the expansion ends (Cancelled) before its
  // Expander is freed, instead of resuming into freed memory.
  auto gate = std::make_shared<Gate>();
  absl::StatusOr<std::unique_ptr<KvCluster>> started =
      KvCluster::Start(GetParam(), 3, "chained_stop", HeldTableOptions(gate));
  ASSERT_TRUE(started.ok()) << started.status();
  KvCluster& kv = **started;
  for (int i = 0; i < 40; ++i) {
    const std::string key = absl::StrCat("key-", i);
    ASSERT_TRUE(kv.Put(1 + i % 3, key, ValueFor(key, i)).ok()) << key;
  }
  const chained::Partition& part = kv.client_as<chained::ChainedClient>(1).table().map->partition(0);
  auto& node = dynamic_cast<chained::ChainedNode&>(kv.kv().table(part.owner));
  Expansion expansion(kv, *gate, 0, 1);
  ASSERT_TRUE(expansion.WaitHeld()) << "the expansion never reached bucket 1";
  ASSERT_TRUE(node.host().expander()->expanding(0));
  started->reset();  // never released: only Stop ends it
  const absl::Status expanded = expansion.Join();
  EXPECT_EQ(expanded.code(), absl::StatusCode::kCancelled) << expanded;
}

INSTANTIATE_TEST_SUITE_P(Backends, ChainedExpansionTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm::kv
