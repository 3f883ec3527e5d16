// Lock-free lookups of the linear-probing table while inserts and removes reshape the
// probe runs under them, on a 3-node cluster (shm and tcp; a model-sized READ with 4
// slots per object, and READs of 2 one-slot objects, so lookups take several round
// trips). The keys' homes are packed just before the table's end and just before a
// shard boundary, so their runs wrap around and cross shards, and removes leave
// tombstones (or clear run ends) in the middle of them; half the values are out of line.
//
// Each key has one writer (sequential puts of increasing generations, and removes);
// values carry their key, generation and a checksum. Readers on every node check every
// answer against what the writers have completed:
//   - a value is well-formed and belongs to the key (never another key's, never torn);
//   - its generation is at least that of the last put completed before the lookup
//     started (no stale value), and never below one the same reader saw before;
//   - a key that was present with no update in flight from before the lookup started
//     until it ended is found (no false "absent").
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "farm/api/sync.h"
#include "gtest/gtest.h"
#include "kv/layout.h"
#include "kv/linear/linear_client.h"
#include "tests/kv/kv_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv {
namespace {

using linear::LinearClient;
using linear::ProbeMap;
using testing::KvCluster;

std::vector<std::string> KeysWithHome(const ProbeMap& map, uint64_t home, int count, const std::string& prefix) {
  std::vector<std::string> keys;
  for (uint64_t i = 0; keys.size() < static_cast<size_t>(count); ++i) {
    std::string key = absl::StrCat(prefix, i);
    if (map.HomeOf(HashKey(key)) == home) keys.push_back(std::move(key));
  }
  return keys;
}

uint64_t Checksum(absl::string_view key, uint64_t gen) { return HashKey(absl::StrCat(key, "#", gen)) & 0xffffff; }

// key|gen|checksum, padded out of line for odd generations.
std::string ValueOf(const std::string& key, uint64_t gen) {
  std::string v = absl::StrCat(key, "|", gen, "|", Checksum(key, gen));
  if (gen % 2 == 1) v.append(48, '.');
  return v;
}

// The generation of a value of `key`, or an error saying what is wrong with it.
absl::StatusOr<uint64_t> GenerationOf(const std::string& key, absl::string_view value) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, '|');
  uint64_t gen = 0, sum = 0;
  if (parts.size() != 3 || parts[0] != key || !absl::SimpleAtoi(parts[1], &gen) ||
      !absl::SimpleAtoi(absl::StripSuffix(parts[2], std::string(48, '.')), &sum) || sum != Checksum(key, gen) ||
      value != ValueOf(key, gen)) {
    return absl::DataLossError(absl::StrCat("a lookup of ", key, " returned \"", value, "\""));
  }
  return gen;
}

// What a key's writer publishes (seq_cst): updates started and completed, whether the
// last completed one left the key present, and the last completed put's generation.
struct KeyState {
  std::string key;
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> completed{0};
  std::atomic<bool> present{false};
  std::atomic<uint64_t> floor{0};
};

struct Shared {
  std::vector<std::unique_ptr<KeyState>> keys;
  std::atomic<bool> stop{false};  // the readers stop at their next step
  std::atomic<int> writers{0}, readers{0};
  Notification writers_done, readers_done;  // TSan-visible, unlike Abseil's build
  std::atomic<uint64_t> reads{0}, saw_value{0}, saw_absent{0}, removes{0}, puts{0};
  std::atomic<uint64_t> gave_up{0};  // updates the executor gave up on (Aborted after conflicts)
  void WriterDone() {
    if (writers.fetch_sub(1) == 1) writers_done.Notify();
  }
  void ReaderDone() {
    if (readers.fetch_sub(1) == 1) readers_done.Notify();
  }
};

// One key's writer, on its own thread: `ops` updates, one at a time.
struct Writer {
  Shared* s;
  KeyState* k;
  KvClient* client;
  int remaining;
  uint64_t gen = 0;
  std::mt19937 rng;
  void Step() {
    if (remaining-- == 0) return s->WriterDone();
    const bool remove = k->present.load() && rng() % 3 == 0;
    k->started.fetch_add(1);
    if (remove) {
      client->Update(OpKind::kRemove, k->key, "", 0, [this](absl::StatusOr<KeyOpResult> r) {
        const absl::Status error = r.ok() ? r->status : r.status();
        if (absl::IsAborted(error)) {
          s->gave_up.fetch_add(1);
        } else if (!error.ok() || !r->existed) {
          ADD_FAILURE() << "remove of " << k->key << ": " << (error.ok() ? "it was not there" : error.ToString());
        } else {
          k->present.store(false);
          s->removes.fetch_add(1);
        }
        k->completed.fetch_add(1);
        Step();
      });
      return;
    }
    const uint64_t g = ++gen;
    client->Update(OpKind::kPut, k->key, ValueOf(k->key, g), 0, [this, g](absl::StatusOr<KeyOpResult> r) {
      const absl::Status error = r.ok() ? r->status : r.status();
      if (absl::IsAborted(error)) {
        // The executor gave up after conflicts: nothing was written (counted, see below).
        s->gave_up.fetch_add(1);
      } else if (!error.ok()) {
        ADD_FAILURE() << "put of " << k->key << ": " << error;
      } else {
        k->floor.store(g);
        k->present.store(true);
        s->puts.fetch_add(1);
      }
      k->completed.fetch_add(1);
      Step();
    });
  }
};

// A sequential reader on its own thread, until the writers stop.
struct Reader {
  Shared* s;
  KvClient* client;
  std::mt19937 rng;
  std::vector<uint64_t> last_seen;  // per key
  void Step() {
    if (s->stop.load()) return s->ReaderDone();
    const size_t i = rng() % s->keys.size();
    KeyState* k = s->keys[i].get();
    // Loads in this order: started, completed, then what the completed updates left.
    const uint64_t started = k->started.load();
    const uint64_t completed = k->completed.load();
    const bool present = k->present.load();
    const uint64_t floor = k->floor.load();
    client->Get(k->key, [this, i, k, started, completed, present, floor](
                            absl::StatusOr<std::optional<absl::string_view>> r) {
      s->reads.fetch_add(1);
      if (!r.ok()) {
        ADD_FAILURE() << "get " << k->key << ": " << r.status();
        return Step();
      }
      if (!r->has_value()) {
        s->saw_absent.fetch_add(1);
        const bool quiet = completed == started && k->started.load() == started;
        if (quiet && present) ADD_FAILURE() << k->key << " was present throughout the lookup, which missed it";
        return Step();
      }
      s->saw_value.fetch_add(1);
      absl::StatusOr<uint64_t> gen = GenerationOf(k->key, **r);
      if (!gen.ok()) {
        ADD_FAILURE() << gen.status();
        return Step();
      }
      if (*gen < floor) ADD_FAILURE() << k->key << ": generation " << *gen << " after " << floor << " completed";
      if (*gen < last_seen[i]) ADD_FAILURE() << k->key << ": generation " << *gen << " after this reader saw " << last_seen[i];
      last_seen[i] = std::max(last_seen[i], *gen);
      Step();
    });
  }
};

class LinearProbeStressTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(LinearProbeStressTest, LookupsNeverReturnAWrongValueWhileRunsWrapAndCrossShards) {
  const auto& [backend, layout] = GetParam();
  KvTableOptions o;
  o.layout = layout;
  o.table.layout.neighbourhood = 4;
  o.table.buckets_per_node = 16;  // 32 slots a node, 96 in all
  absl::StatusOr<std::unique_ptr<KvCluster>> started = KvCluster::Start(backend, 3, "linear_stress", o);
  ASSERT_TRUE(started.ok()) << started.status();
  KvCluster& kv = **started;
  const ProbeMap& map = kv.client_as<LinearClient>(1).map();
  ASSERT_GE(map.shards().size(), 3u);
  const uint64_t m = map.slots();
  const uint64_t boundary = map.FirstSlotOf(linear::GroupRef{1, 0});

  Shared s;
  std::vector<std::string> names = KeysWithHome(map, m - 3, 8, "end");
  for (std::string& key : KeysWithHome(map, boundary - 2, 8, "edge")) names.push_back(std::move(key));
  for (int i = 0; i < 8; ++i) names.push_back(absl::StrCat("any", i));
  for (std::string& name : names) {
    auto k = std::make_unique<KeyState>();
    k->key = std::move(name);
    s.keys.push_back(std::move(k));
  }
  const int ops = backend == "shm" ? 150 : 60;
  const uint32_t seed = std::random_device()();
  SCOPED_TRACE(absl::StrCat("seed ", seed));

  // Writers on node 1 and 2, thread 0; 4 readers on each other thread (and node 3's).
  std::vector<std::unique_ptr<Writer>> writers;
  for (size_t i = 0; i < s.keys.size(); ++i) {
    const NodeId node = 1 + i % 2;
    writers.push_back(std::make_unique<Writer>(
        Writer{&s, s.keys[i].get(), &kv.client(node, 0), ops, 0, std::mt19937(seed + i)}));
  }
  std::vector<std::pair<NodeId, size_t>> reader_threads = {{1, 1}, {2, 1}, {3, 0}, {3, 1}};
  std::vector<std::unique_ptr<Reader>> readers;
  for (auto [node, t] : reader_threads) {
    for (int c = 0; c < 4; ++c) {
      readers.push_back(std::make_unique<Reader>(Reader{&s, &kv.client(node, t),
                                                        std::mt19937(seed + 1000 + readers.size()),
                                                        std::vector<uint64_t>(s.keys.size(), 0)}));
    }
  }
  s.writers = static_cast<int>(writers.size());
  s.readers = static_cast<int>(readers.size());
  for (size_t i = 0; i < writers.size(); ++i) {
    kv.host(1 + i % 2).context(0).Post([w = writers[i].get()] { w->Step(); });
  }
  for (size_t i = 0; i < readers.size(); ++i) {
    const auto [node, t] = reader_threads[i / 4];
    kv.host(node).context(t).Post([r = readers[i].get()] { r->Step(); });
  }
  if (!s.writers_done.WaitForNotificationWithTimeout(absl::Seconds(240))) {
    ADD_FAILURE() << "the writers did not finish in 240 s";
    std::abort();  // continuations still refer to this frame
  }
  s.stop = true;
  if (!s.readers_done.WaitForNotificationWithTimeout(absl::Seconds(60))) {
    ADD_FAILURE() << "the readers did not stop";
    std::abort();
  }
  std::printf("%s %s: %llu lookups (%llu saw a value, %llu none) during %llu puts and %llu removes (%llu given up)\n",
              backend.c_str(), layout.c_str(), static_cast<unsigned long long>(s.reads.load()),
              static_cast<unsigned long long>(s.saw_value.load()), static_cast<unsigned long long>(s.saw_absent.load()),
              static_cast<unsigned long long>(s.puts.load()), static_cast<unsigned long long>(s.removes.load()),
              static_cast<unsigned long long>(s.gave_up.load()));
  EXPECT_GT(s.reads.load(), 500u);
  EXPECT_GT(s.saw_value.load(), 100u);
  EXPECT_GT(s.saw_absent.load(), 10u);
  EXPECT_GT(s.removes.load(), 100u);
  // Writers are not starved: the executor gives up (Aborted after 5 s of conflicts) on
  // few updates, if any, even with every writer on one of two shared runs.
  EXPECT_LE(s.gave_up.load() * 100, s.puts.load() + s.removes.load());
  // The final state is every key's last completed update, and the scan agrees.
  uint64_t present = 0;
  for (const auto& k : s.keys) {
    absl::StatusOr<std::optional<std::string>> got = kv.Get(3, k->key);
    ASSERT_TRUE(got.ok()) << got.status();
    if (k->present.load()) {
      ++present;
      EXPECT_EQ(*got, std::optional<std::string>(ValueOf(k->key, k->floor.load()))) << k->key;
    } else {
      EXPECT_FALSE(got->has_value()) << k->key;
    }
  }
  absl::StatusOr<TableScan> scan = kv.Scan(2);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->pairs, present);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LinearProbeStressTest,
                         ::testing::Combine(::testing::ValuesIn(farm::testing::TestBackends()),
                                            ::testing::Values("linear", "linear:R=2,G=1")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) == "linear" ? "_model" : "_short");
                         });

}  // namespace
}  // namespace farm::kv
