// KvClient::ScanKeys (Store::ScanKeys, Redis SCAN) on the hopscotch table
// (kv/table_key_scan.h) and the linear-probing one (kv/linear/linear_key_scan.h), on a
// 3-node in-process cluster (shm and tcp):
//   - a whole scan returns every key exactly once — inline and out-of-line pairs, in
//     buckets and in overflow chains (hopscotch) — at every page size, from every node,
//     and with each page from another node;
//   - an empty table, and a cursor past the end: one empty page, cursor 0;
//   - while writers insert, overwrite and remove other keys (hopscotch: of the same
//     buckets, H = 2 and few buckets — long chains, and every remove moves a chain's
//     last pair into its hole; linear: tombstones among the runs), every whole scan
//     returns each key that stays exactly once, and no key that was never written;
//   - the other layouts answer Unimplemented.
#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv/key_scan_pages.h"
#include "tests/kv/kv_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv {
namespace {

using testing::KvCluster;

// Every page from cursor 0 to the end; the pages' count in *pages.
absl::StatusOr<std::vector<std::string>> ScanAll(KvCluster& kv, NodeId on, uint32_t count,
                                                 size_t t = 0, int* pages = nullptr) {
  std::vector<std::string> keys;
  uint64_t cursor = 0;
  int n = 0;
  do {
    absl::StatusOr<KeyPage> page = kv.ScanKeys(on, cursor, count, t);
    if (!page.ok()) return page.status();
    keys.insert(keys.end(), page->keys.begin(), page->keys.end());
    cursor = page->cursor;
    ++n;
  } while (cursor != 0);
  if (pages != nullptr) *pages = n;
  return keys;
}

// Key -> how often the scan returned it.
absl::flat_hash_map<std::string, int> Counts(const std::vector<std::string>& keys) {
  absl::flat_hash_map<std::string, int> counts;
  for (const std::string& k : keys) ++counts[k];
  return counts;
}

// Parameters: the fabric backend and the table layout.
// The next scripted answer (a page with one key when the script is done).
Task<absl::StatusOr<std::optional<KeyPage>>> Answer(
    std::vector<uint32_t>& windows, std::vector<absl::StatusOr<std::optional<KeyPage>>>& answers,
    uint32_t window) {
  windows.push_back(window);
  if (windows.size() <= answers.size()) co_return answers[windows.size() - 1];
  co_return std::optional<KeyPage>(KeyPage{{"k"}, 0});
}

class KeyScanTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  std::unique_ptr<KvCluster> Start(TableOptions options, const std::string& name) {
    const auto& [backend, layout] = GetParam();
    absl::StatusOr<std::unique_ptr<KvCluster>> kv =
        KvCluster::Start(backend, 3, name, KvTableOptions{layout, options});
    EXPECT_TRUE(kv.ok()) << kv.status();
    return kv.ok() ? std::move(*kv) : nullptr;
  }
  bool hopscotch() const { return std::get<1>(GetParam()) == "hopscotch"; }
};

TEST_P(KeyScanTest, AWholeScanReturnsEveryKeyOnce) {
  TableOptions options;
  // Hopscotch: 1,500 pairs in 192 buckets of 4 slots, so chains too; linear: 3,072 slots.
  options.buckets_per_node = hopscotch() ? 64 : 256;
  std::unique_ptr<KvCluster> kv = Start(options, "kv_key_scan");
  ASSERT_NE(kv, nullptr);
  {
    absl::StatusOr<std::vector<std::string>> empty = ScanAll(*kv, 1, 10);
    ASSERT_TRUE(empty.ok()) << empty.status();
    EXPECT_TRUE(empty->empty());
  }
  std::vector<std::string> keys;
  for (int i = 0; i < 1500; ++i) {
    // Long keys and long values go out of line; every fifth key is binary.
    std::string key =
        i % 4 == 0 ? absl::StrCat("a-long-key-that-is-not-inline-", i) : absl::StrCat("k", i);
    if (i % 5 == 0) key += std::string("\0\xff", 2);
    keys.push_back(key);
    const std::string value = i % 3 == 0 ? std::string(80, 'v') : "v";
    ASSERT_TRUE(kv->Put(1 + i % 3, key, value).ok()) << i;
  }
  absl::StatusOr<TableScan> stats = kv->Scan(1);
  ASSERT_TRUE(stats.ok());
  if (hopscotch()) {
    ASSERT_GT(stats->overflow_blocks, 0u) << "the test wants chains";
  }
  ASSERT_GT(stats->out_of_line, 0u);
  for (uint32_t count : {1u, 10u, 97u, 100000u}) {
    for (NodeId on : {1, 2, 3}) {
      SCOPED_TRACE(absl::StrCat("COUNT ", count, " from node ", on));
      int pages = 0;
      absl::StatusOr<std::vector<std::string>> got = ScanAll(*kv, on, count, 0, &pages);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->size(), keys.size());
      absl::flat_hash_map<std::string, int> counts = Counts(*got);
      for (const std::string& k : keys) EXPECT_EQ(counts[k], 1) << absl::CHexEscape(k);
      // Hopscotch: 3 shards of 63 home buckets, each holding pairs; linear: 3 x 256
      // groups, some empty (a page goes on until it holds a key).
      if (count == 1) {  // a bucket or group a page, but an empty one joins the next
        EXPECT_GT(pages, hopscotch() ? 150 : 400);
        EXPECT_LE(pages, hopscotch() ? 189 : 768);
      }
      if (count == 100000) {
        EXPECT_EQ(pages, 1);  // windows follow one another until the end
      }
    }
  }
  // Every node has the same map: a scan may take each page from another node.
  {
    std::vector<std::string> got;
    uint64_t cursor = 0;
    int page_number = 0;
    do {
      absl::StatusOr<KeyPage> page = kv->ScanKeys(1 + page_number++ % 3, cursor, 10);
      ASSERT_TRUE(page.ok()) << page.status();
      got.insert(got.end(), page->keys.begin(), page->keys.end());
      cursor = page->cursor;
    } while (cursor != 0);
    absl::flat_hash_map<std::string, int> counts = Counts(got);
    EXPECT_EQ(got.size(), keys.size());
    for (const std::string& k : keys) EXPECT_EQ(counts[k], 1) << absl::CHexEscape(k);
  }
  // A cursor past the end: an empty page that ends the scan.
  absl::StatusOr<KeyPage> past = kv->ScanKeys(2, uint64_t{1} << 40, 10);
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_TRUE(past->keys.empty());
  EXPECT_EQ(past->cursor, 0u);
}

TEST_P(KeyScanTest, ScansUnderWritersReturnEachStayingKeyOnce) {
  // Hopscotch: H = 2 (one slot a bucket) and 8 buckets a node, so most pairs live in
  // chains, and each remove moves a chain's last pair into the hole it leaves. Linear:
  // 3 x 192 slots for 240 keys at most, so long runs and tombstones.
  TableOptions options;
  if (hopscotch()) {
    options.layout.neighbourhood = 2;
    options.buckets_per_node = 8;
  } else {
    options.buckets_per_node = 48;
  }
  std::unique_ptr<KvCluster> kv = Start(options, "kv_key_scan_writers");
  ASSERT_NE(kv, nullptr);
  constexpr int kStaying = 120;
  constexpr int kChurning = 120;
  absl::flat_hash_set<std::string> staying, universe;
  for (int i = 0; i < kStaying; ++i) {
    const std::string key = absl::StrCat("stay-", i);
    ASSERT_TRUE(kv->Put(1 + i % 3, key, i % 2 ? std::string(60, 's') : "s").ok());
    staying.insert(key);
    universe.insert(key);
  }
  for (int i = 0; i < kChurning; ++i) universe.insert(absl::StrCat("churn-", i));
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::vector<std::thread> writers;
  for (NodeId on : {1, 3}) {
    writers.emplace_back([&, on] {
      std::mt19937 rng(on);
      while (!stop.load()) {
        const std::string key = absl::StrCat("churn-", rng() % kChurning);
        absl::Status s = rng() % 3 == 0 ? kv->Remove(on, key).status()
                                        : kv->Put(on, key, rng() % 2 ? std::string(70, 'c') : "c");
        ASSERT_TRUE(s.ok()) << s;
        writes.fetch_add(1);
      }
    });
  }
  // At least 40 scans, and on until the writers have done 3,000 writes (20 s at most).
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  int scans = 0;
  for (; (scans < 40 || writes.load() < 3000) && absl::Now() < deadline && !HasFailure(); ++scans) {
    SCOPED_TRACE(absl::StrCat("scan ", scans, " after ", writes.load(), " writes"));
    // A page of 4 home buckets: every scan spans many transactions and much churn.
    absl::StatusOr<std::vector<std::string>> got = ScanAll(*kv, 2, 8, /*t=*/1);
    ASSERT_TRUE(got.ok()) << got.status();
    absl::flat_hash_map<std::string, int> counts = Counts(*got);
    for (const auto& [key, n] : counts) {
      EXPECT_TRUE(universe.contains(key)) << "never written: " << absl::CHexEscape(key);
      EXPECT_EQ(n, 1) << key << " returned " << n << " times";
    }
    for (const std::string& key : staying) EXPECT_EQ(counts[key], 1) << key << " missed";
  }
  stop.store(true);
  for (std::thread& w : writers) w.join();
  EXPECT_GE(scans, 40);
  EXPECT_GE(writes.load(), 3000) << "the writers barely ran";
}

// On a sparse table a page reads windows until it holds COUNT keys, or has read about
// 10 x COUNT buckets (slots, linear) — Redis's dictScan bound — sizing each next window by
// the keys a bucket held so far: 200 keys in 6,141 home buckets (6,144 groups) take at
// most 80 (150) pages of COUNT 10, not the 1,229 (1,536) of fixed windows of 5 buckets
// (5 groups).
TEST_P(KeyScanTest, SparseTablesGivePagesOfAboutCountKeys) {
  TableOptions options;
  options.buckets_per_node = 2048;
  std::unique_ptr<KvCluster> kv = Start(options, "kv_key_scan_sparse");
  ASSERT_NE(kv, nullptr);
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) {
    keys.push_back(absl::StrCat("sparse-", i));
    ASSERT_TRUE(kv->Put(1 + i % 3, keys.back(), "v").ok());
  }
  int pages = 0;
  absl::StatusOr<std::vector<std::string>> got = ScanAll(*kv, 3, 10, 0, &pages);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ::testing::UnorderedElementsAreArray(keys));
  EXPECT_LE(pages, hopscotch() ? 80 : 150);
  EXPECT_GE(pages, 20);  // 200 keys in pages of about 10
}

// A page over its budget (ScanBudget: 1,024 objects, 4 MiB) is split, and every key still
// comes back once, through a node that is the primary of one shard of three. Hopscotch:
// H = 32 and long keys (out of line) put about 1,300 value objects in a shard's window of
// 127 home buckets; a page of COUNT 254 is that window, over the objects' budget, so it
// ends after 64 buckets: two pages a shard instead of one. Then 40 KiB values put about
// 5 MiB in a window (over the bytes' budget; the split is inside a page, not seen in the
// count), on both layouts. RetryScanPageTest checks the halving itself.
TEST_P(KeyScanTest, PagesOverTheBudgetAreSplit) {
  struct Case {
    uint32_t keys;
    size_t value_bytes;
    uint32_t count;
    int min_pages;
  };
  const std::vector<Case> cases =
      hopscotch() ? std::vector<Case>{{3900, 8, 254, 4}, {400, 40 << 10, 100000, 1}}
                  : std::vector<Case>{{200, 40 << 10, 100000, 1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.keys, " keys of ", c.value_bytes, "-byte values"));
    TableOptions options;
    if (hopscotch()) {
      options.layout.neighbourhood = 32;
      options.buckets_per_node = 128;  // 3 shards of 127 home buckets (each shard's share of
                                       // the keys varies with its address)
    } else {
      options.buckets_per_node = 128;  // 3 x 128 groups of 4 slots
    }
    std::unique_ptr<KvCluster> kv = Start(options, "kv_key_scan_budget");
    ASSERT_NE(kv, nullptr);
    std::vector<std::string> keys;
    for (uint32_t i = 0; i < c.keys; ++i) {
      keys.push_back(absl::StrCat("a-key-long-enough-to-be-out-of-line-", i));
      ASSERT_TRUE(kv->Put(1 + i % 3, keys.back(), std::string(c.value_bytes, 'v')).ok()) << i;
    }
    int pages = 0;
    absl::StatusOr<std::vector<std::string>> got = ScanAll(*kv, 2, c.count, 0, &pages);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->size(), keys.size());
    absl::flat_hash_map<std::string, int> counts = Counts(*got);
    for (const std::string& k : keys) EXPECT_EQ(counts[k], 1) << k;
    EXPECT_GE(pages, c.min_pages) << "a shard's window over the objects' budget is split";
  }
}

// RetryScanPage's rules, with attempts that answer what the test says: a conflict is read
// again with the same window, halved after every fourth; a window over the budget is
// halved at once and costs no conflict; after 40 conflicts, Unavailable.
TEST(RetryScanPageTest, ConflictsAndBudgetsShrinkTheWindow) {
  absl::StatusOr<std::unique_ptr<KvCluster>> kv =
      KvCluster::Start("shm", 1, "kv_key_scan_retry", TableOptions{}, 1);
  ASSERT_TRUE(kv.ok()) << kv.status();
  // Each attempt answers the next of `answers` (then a page), and notes its window.
  struct Script {
    std::vector<absl::StatusOr<std::optional<KeyPage>>> answers;
    std::vector<uint32_t> windows;
  };
  auto run = [&](uint32_t window, std::shared_ptr<Script> script) {
    return (*kv)->kv().Run<absl::StatusOr<KeyPage>>(
        1, 0, [window, script](KvClient& c, auto finish) {
          ScanAttempt attempt =
              [script](uint32_t w) -> Task<absl::StatusOr<std::optional<KeyPage>>> {
            return Answer(script->windows, script->answers, w);
          };
          Spawn(RetryScanPage(c.ctx(), window, std::move(attempt)), std::move(finish));
        });
  };
  const absl::Status conflict = absl::AbortedError("conflict");
  {
    auto script = std::make_shared<Script>();
    for (int i = 0; i < 5; ++i) script->answers.push_back(conflict);
    absl::StatusOr<KeyPage> page = run(8, script);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(script->windows, (std::vector<uint32_t>{8, 8, 8, 8, 4, 4}));
  }
  {
    auto script = std::make_shared<Script>();
    script->answers = {std::optional<KeyPage>(), std::optional<KeyPage>(), conflict,
                       std::optional<KeyPage>()};
    absl::StatusOr<KeyPage> page = run(1000, script);  // clamped to 256
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(script->windows, (std::vector<uint32_t>{256, 128, 64, 64, 32}));
  }
  {
    auto script = std::make_shared<Script>();
    for (int i = 0; i < 40; ++i) script->answers.push_back(conflict);
    absl::StatusOr<KeyPage> page = run(2, script);
    EXPECT_EQ(page.status().code(), absl::StatusCode::kUnavailable) << page.status();
    EXPECT_EQ(script->windows.size(), 40u);
    EXPECT_EQ(script->windows.back(), 1u);
  }
  {
    auto script = std::make_shared<Script>();
    script->answers = {absl::InternalError("corrupt")};
    EXPECT_EQ(run(4, script).status().code(), absl::StatusCode::kInternal);  // not retried
    EXPECT_EQ(script->windows.size(), 1u);
  }
}

TEST(KeyScanLayoutsTest, OtherLayoutsAnswerUnimplemented) {
  for (const char* layout : {"chained", "cuckoo"}) {
    absl::StatusOr<std::unique_ptr<KvCluster>> kv =
        KvCluster::Start("shm", 3, "kv_key_scan_layouts", KvTableOptions{layout, TableOptions{}});
    ASSERT_TRUE(kv.ok()) << kv.status();
    absl::StatusOr<KeyPage> page = (*kv)->ScanKeys(1, 0, 10);
    EXPECT_EQ(page.status().code(), absl::StatusCode::kUnimplemented)
        << layout << ": " << page.status();
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, KeyScanTest,
                         ::testing::Combine(::testing::ValuesIn(farm::testing::TestBackends()),
                                            ::testing::Values("hopscotch", "linear")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace farm::kv
