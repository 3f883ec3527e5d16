// Linearizability of concurrent get/put/remove from every node: 3 nodes x 2 threads x 4
// sequential clients on small tables, for every table layout: lookups meet hopscotch
// moves, chain collapses and replaced values, or linear probes that run across shard
// boundaries and around the table's end through tombstones. Workloads kMixed and
// kChains (hopscotch), kLinear and kLinearShortReads (linear probing), kChained and
// kChainedOneSlot (Mercury's chained table, expanding during the first round), several rounds
// each with fresh keys and seeds; every key's history is checked by the register
// checker. Also unit tests of the checker itself. The soak (ctest -L soak) repeats it.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/log.h"
#include "farm/base/mutex.h"
#include "gtest/gtest.h"
#include "kv/cuckoo/cuckoo_client.h"
#include "tests/support/fabric_test_util.h"
#include "tests/kv/kv_cluster.h"
#include "tests/kv/register_checker.h"

namespace farm::kv {
namespace {

using testing::CheckRegister;
using testing::KvCluster;
using testing::RegisterOp;
using Kind = RegisterOp::Kind;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST(RegisterCheckerTest, AcceptsOverlapsAndRejectsStaleReads) {
  // put a [0,10]; get sees a [5,15]; put b [20,30]; get sees a [35,40]: stale.
  std::vector<RegisterOp> ops = {{Kind::kPut, "a", false, 0, 10},
                                 {Kind::kGet, "a", false, 5, 15},
                                 {Kind::kPut, "b", true, 20, 30}};
  EXPECT_TRUE(CheckRegister(ops).ok());
  ops.push_back({Kind::kGet, "a", false, 35, 40});
  EXPECT_EQ(CheckRegister(ops).code(), absl::StatusCode::kFailedPrecondition);
  // Overlapping get may see either side of a concurrent put.
  ops.back() = {Kind::kGet, "a", false, 21, 40};
  EXPECT_TRUE(CheckRegister(ops).ok());
  // A remove that claims the key was absent after a completed put is wrong.
  ops.push_back({Kind::kRemove, std::nullopt, false, 50, 60});
  EXPECT_EQ(CheckRegister(ops).code(), absl::StatusCode::kFailedPrecondition);
  ops.back().existed = true;
  ops.push_back({Kind::kGet, std::nullopt, false, 70, 80});
  EXPECT_TRUE(CheckRegister(ops).ok());
  ops.push_back({Kind::kGet, "zzz", false, 90, 95});
  EXPECT_EQ(CheckRegister(ops).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RegisterCheckerTest, APendingUpdateMayHaveHappenedWithinItsWindowOrNotAtAll) {
  // put a [0,10] acked; put b pending [20,100] (the cluster died under it).
  std::vector<RegisterOp> base = {{Kind::kPut, "a", false, 0, 10},
                                  {Kind::kPut, "b", true, 20, 100, /*pending=*/true}};
  base[1].existed = false;  // unknown: ignored for a pending update
  // Later reads of a (b never happened) or of b (it did) are both fine ...
  for (const char* seen : {"a", "b"}) {
    std::vector<RegisterOp> ops = base;
    ops.push_back({Kind::kGet, seen, false, 150, 160});
    EXPECT_TRUE(CheckRegister(ops).ok()) << seen;
  }
  // ... but not b and then a again, nor b before the pending put started.
  std::vector<RegisterOp> flip = base;
  flip.push_back({Kind::kGet, "b", false, 150, 160});
  flip.push_back({Kind::kGet, "a", false, 170, 180});
  EXPECT_EQ(CheckRegister(flip).code(), absl::StatusCode::kFailedPrecondition);
  std::vector<RegisterOp> early = base;
  early.push_back({Kind::kGet, "b", false, 12, 15});
  EXPECT_EQ(CheckRegister(early).code(), absl::StatusCode::kFailedPrecondition);
  // Its window is respected: it cannot take effect after it ended (a read of a after a
  // read of b inside the window is stale).
  std::vector<RegisterOp> inside = base;
  inside.push_back({Kind::kGet, "b", false, 30, 40});
  inside.push_back({Kind::kGet, "a", false, 110, 120});
  EXPECT_EQ(CheckRegister(inside).code(), absl::StatusCode::kFailedPrecondition);
  // A pending get is no evidence of anything.
  std::vector<RegisterOp> get = base;
  get.push_back({Kind::kGet, "zzz", false, 30, 40, /*pending=*/true});
  EXPECT_TRUE(CheckRegister(get).ok());
}

TEST(RegisterCheckerTest, PendingPutsNobodySawCostNothingToSearch) {
  // After put a, 40 clients' puts of unknown outcome, each spanning the whole window (a
  // failover), among reads that see only a and then c: the search would have to place
  // each unseen put anywhere in the window (far more than 2M states); they change
  // nothing anyone saw, so the verdict comes at once.
  std::vector<RegisterOp> ops = {{Kind::kPut, "a", false, 0, 10}};
  for (int i = 0; i < 40; ++i) {
    ops.push_back({Kind::kPut, absl::StrCat("p", i), true, 20 + i, 6'000'000, /*pending=*/true});
    ops.push_back({Kind::kGet, "a", false, 100 + 10 * i, 105 + 10 * i});
  }
  ops.push_back({Kind::kPut, "c", true, 1000, 1010});
  for (int i = 0; i < 40; ++i) ops.push_back({Kind::kGet, "c", false, 2000 + 10 * i, 2005 + 10 * i});
  EXPECT_TRUE(CheckRegister(ops).ok()) << CheckRegister(ops);
  // A stale read among them is still found.
  std::vector<RegisterOp> stale = ops;
  stale.push_back({Kind::kGet, "a", false, 3000, 3005});
  EXPECT_EQ(CheckRegister(stale).code(), absl::StatusCode::kFailedPrecondition);
  // A pending put someone saw is searched: seen, then the value before it again, is wrong.
  std::vector<RegisterOp> seen = ops;
  seen.push_back({Kind::kGet, "p7", false, 3000, 3005});
  EXPECT_TRUE(CheckRegister(seen).ok()) << CheckRegister(seen);
  seen.push_back({Kind::kGet, "c", false, 3100, 3105});
  EXPECT_EQ(CheckRegister(seen).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RegisterCheckerTest, CarriesEveryPossibleStateAcrossQuietMoments) {
  // Concurrent puts a and b, then (after a pause) a get of a: the order was b, a. A
  // later get of b is stale.
  std::vector<RegisterOp> ops = {{Kind::kPut, "a", true, 0, 10},
                                 {Kind::kPut, "b", false, 5, 15},
                                 {Kind::kGet, "a", false, 20, 25}};
  EXPECT_TRUE(CheckRegister(ops).ok());
  ops.push_back({Kind::kGet, "b", false, 30, 35});
  absl::Status s = CheckRegister(ops);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("operations 3..3"), absl::string_view::npos) << s;
}

TEST(RegisterCheckerTest, LongHistoriesGetAVerdictAndAViolationItsWindow) {
  // 200,000 operations from 4 overlapping clients: linearizable as generated.
  std::vector<RegisterOp> ops;
  std::mt19937 rng(7);
  std::optional<std::string> value;
  int64_t t = 0;
  for (int i = 0; i < 50'000; ++i) {
    // Four operations, each overlapping the next, within [t, t + 60].
    const std::string v = absl::StrCat("v", i);
    ops.push_back({Kind::kPut, v, value.has_value(), t, t + 10 + int64_t(rng() % 10)});
    ops.push_back({Kind::kGet, v, false, t + 5, t + 30});
    ops.push_back({Kind::kRemove, std::nullopt, true, t + 21, t + 40 + int64_t(rng() % 10)});
    ops.push_back({Kind::kGet, std::nullopt, false, t + 45, t + 60});
    value.reset();
    t += 100;
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(CheckRegister(ops).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // A get deep in the history that sees a value removed long before: its window.
  ops[4 * 40'000 + 1].value = "v39999";
  absl::Status s = CheckRegister(ops);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("operations 160000..160003"), absl::string_view::npos) << s;
}

// A workload: the table's shape, the keys and the mix of operations. Each test runs
// `rounds` histories on one cluster, with fresh keys and seeds each round. Clients
// come in groups of three, one on each node; each group has keys of its own, so a
// key's history has at most three operations in flight at a time (the checker's search
// stays small) while every key shares the table's few buckets and chains with all.
struct Workload {
  const char* name;
  const char* layout;  // kv/table_layouts.h
  uint32_t neighbourhood;  // hopscotch's H; linear: slots = buckets_per_node * H/2
  uint64_t buckets_per_node;
  int keys_per_group;
  int get_percent;     // gets; the rest are puts and removes
  int remove_percent;  // removes, of all operations
  int ops_per_client;  // shm; tcp runs half as many
  int rounds;
};

// "mixed": H = 4 with displacement, chains and out-of-line values. "chains": H = 2 on
// shards of 2 one-slot buckets (3 home buckets), so most pairs live in chains of 4-7
// blocks and a quarter of the operations are removes that reshuffle them: the
// contention that exposes lookups racing chain collapse. "linear": 32 slots per node in
// groups of 4 (96 slots, 8 groups per shard) for up to 72 keys, so probe runs are long,
// cross shard boundaries and wrap around, and removes leave tombstones that later
// inserts reuse; out-of-line values among them. "linear_short": the same with READs of 3
// slots and one slot per object, so most lookups take several round trips.
const Workload kMixed{"mixed", "hopscotch", 4, 6, 9, 45, 15, 500, 10};
const Workload kChains{"chains", "hopscotch", 2, 2, 6, 45, 25, 400, 10};
const Workload kLinear{"linear", "linear", 4, 16, 9, 45, 20, 500, 10};
const Workload kLinearShortReads{"linear_short", "linear:R=3,G=1", 4, 16, 9, 45, 20, 400, 10};
// "chained": Mercury's chained table from 2 buckets per node, so the first round's
// inserts expand every partition several times while the histories run (lookups and
// updates meet half-migrated tables); "chained_s1": one pair per head and block from 1
// bucket per node, so chains form between expansions and removes repack them.
const Workload kChained{"chained", "chained:B=2", 4, 2, 9, 45, 20, 500, 10};
const Workload kChainedOneSlot{"chained_s1", "chained:S=1,B=1,load=2", 4, 1, 9, 45, 25, 400, 10};
// "cuckoo": Nessie's one-sided table, 2 ways, 32 pairs of capacity and 128 index slots
// per node (384 for up to 72 keys): PUTs displace pairs (MIGRATE) while other clients
// read and write them. (With 64 per node, 192 slots, a 2-way insert found no slot about
// once in 60000 updates even with chains of 10 — a 2-way cuckoo graph that small has
// two cycles in a component now and then — and answered ResourceExhausted, which this
// harness counts as a failure.) "cuckoo3": 3 ways and an index as large as the capacity (48 per
// node, 144 for 72 keys), so displacements chain.
const Workload kCuckoo{"cuckoo", "cuckoo:N=2,I=4,D=10", 4, 16, 9, 45, 20, 500, 10};
const Workload kCuckoo3{"cuckoo3", "cuckoo:N=3,I=1,D=6", 4, 24, 9, 45, 20, 500, 10};

void PrintTo(const Workload& w, std::ostream* os) { *os << w.name; }

// The cuckoo layout's update counts, summed over every client (read on their threads).
cuckoo::UpdateStats CuckooUpdateStats(KvCluster& kv) {
  cuckoo::UpdateStats sum;
  for (NodeId n = 1; n <= 3; ++n) {
    for (size_t t = 0; t < 2; ++t) {
      absl::StatusOr<cuckoo::UpdateStats> s =
          kv.kv().Run<absl::StatusOr<cuckoo::UpdateStats>>(n, t, [](KvClient& c, auto finish) {
            finish(dynamic_cast<cuckoo::CuckooClient&>(c).ops().update_stats());
          });
      if (!s.ok()) continue;
      sum.migrations += s->migrations;
      sum.migration_aborts += s->migration_aborts;
      sum.rollbacks += s->rollbacks;
      sum.retries += s->retries;
      sum.full += s->full;
      sum.reclaims += s->reclaims;
    }
  }
  return sum;
}

struct Client {
  NodeId node;
  size_t thread;
  int group;
  int id;
  int remaining;
  std::mt19937 rng;
  std::vector<std::pair<std::string, RegisterOp>> history;
};

// One round: every client runs its operations; returns every key's history.
std::map<std::string, std::vector<RegisterOp>> RunRound(KvCluster& kv, const Workload& w, int ops_per_client,
                                                        int round, uint32_t seed) {
  constexpr int kClientsPerThread = 4;
  std::vector<std::unique_ptr<Client>> clients;
  for (NodeId n = 1; n <= 3; ++n) {
    for (size_t t = 0; t < 2; ++t) {
      for (int c = 0; c < kClientsPerThread; ++c) {
        const int id = static_cast<int>(clients.size());
        const int group = static_cast<int>(t) * kClientsPerThread + c;  // the same on every node
        clients.push_back(
            std::make_unique<Client>(Client{n, t, group, id, ops_per_client, std::mt19937(seed + id), {}}));
      }
    }
  }
  std::atomic<int> running{static_cast<int>(clients.size())};
  Notification all_done;  // TSan-visible, unlike Abseil's build
  // One step of a client: the next operation, recorded when it completes.
  struct Driver {
    KvCluster* kv;
    const Workload* w;
    int round;
    std::atomic<int>* running;
    Notification* all_done;
    void Step(Client* c) {
      if (c->remaining-- == 0) {
        if (running->fetch_sub(1) == 1) all_done->Notify();
        return;
      }
      KvClient& client = kv->client(c->node, c->thread);
      const std::string key = absl::StrCat("r", round, "-g", c->group, "-", c->rng() % w->keys_per_group);
      const int dice = static_cast<int>(c->rng() % 100);
      const int64_t start = NowNs();
      if (dice < w->get_percent) {
        client.Get(key, [this, c, key, start](absl::StatusOr<std::optional<absl::string_view>> r) {
          // A failure is reported and the client goes on: an ASSERT here would leave the
          // run waiting for this client forever.
          if (!r.ok()) {
            ADD_FAILURE() << "get " << key << ": " << r.status();
            return Step(c);
          }
          RegisterOp op{Kind::kGet, std::nullopt, false, start, NowNs()};
          if (r->has_value()) op.value = std::string(**r);
          c->history.emplace_back(key, op);
          Step(c);
        });
        return;
      }
      const bool remove = dice < w->get_percent + w->remove_percent;
      // Unique per key: who wrote it and when; long values go out of line.
      std::string value = absl::StrCat("c", c->id, "-", c->remaining);
      if (c->rng() % 4 == 0) value.append(60, 'x');
      client.Update(remove ? OpKind::kRemove : OpKind::kPut, key, value, 0,
                    [this, c, key, value, remove, start](absl::StatusOr<KeyOpResult> r) {
                      const absl::Status failed = !r.ok() ? r.status() : r->status;
                      if (!failed.ok()) {
                        ADD_FAILURE() << (remove ? "remove " : "put ") << key << ": " << failed;
                        return Step(c);
                      }
                      RegisterOp op{remove ? Kind::kRemove : Kind::kPut, std::nullopt, r->existed, start, NowNs()};
                      if (!remove) op.value = value;
                      c->history.emplace_back(key, op);
                      Step(c);
                    });
    }
  };
  Driver driver{&kv, &w, round, &running, &all_done};
  for (auto& c : clients) {
    Client* client = c.get();
    kv.host(client->node).context(client->thread).Post([&driver, client] { driver.Step(client); });
  }
  std::map<std::string, std::vector<RegisterOp>> by_key;
  if (!all_done.WaitForNotificationWithTimeout(absl::Seconds(120))) {
    ADD_FAILURE() << "the clients did not finish in 120 s";
    std::abort();  // continuations still refer to this frame
  }
  size_t total = 0;
  for (auto& c : clients) {
    for (auto& [key, op] : c->history) {
      by_key[key].push_back(op);
      ++total;
    }
  }
  EXPECT_EQ(total, clients.size() * ops_per_client);
  return by_key;
}

class LinearizabilityTest : public ::testing::TestWithParam<std::tuple<std::string, Workload>> {};

TEST_P(LinearizabilityTest, ConcurrentGetPutRemoveFromEveryNodeAreLinearizable) {
  const auto& [backend, w] = GetParam();
  SetLogLevel(LogLevel::kWarning);  // the nodes' start-up lines would push a failure out of CI's view
  KvTableOptions options;
  options.layout = w.layout;
  options.table.layout.neighbourhood = w.neighbourhood;
  options.table.buckets_per_node = w.buckets_per_node;
  absl::StatusOr<std::unique_ptr<KvCluster>> started =
      KvCluster::Start(backend, 3, absl::StrCat("kv_linearizable_", w.name), options);
  ASSERT_TRUE(started.ok()) << started.status();
  KvCluster& kv = **started;
  const int ops_per_client = backend == "shm" ? w.ops_per_client : w.ops_per_client / 2;
  const uint32_t seed = std::random_device()();
  uint64_t migrations_before = 0;
  // Each round's figures, printed only when the test fails: a passing case prints one
  // line, so a failure stays near the top of the test's output (CI shows its head).
  std::string rounds;
  for (int round = 0; round < w.rounds; ++round) {
    SCOPED_TRACE(absl::StrCat(w.name, " round ", round, ", seed ", seed + 1000 * round));
    std::map<std::string, std::vector<RegisterOp>> by_key =
        RunRound(kv, w, ops_per_client, round, seed + 1000 * round);
    // The histories are not trivial: gets saw values and absences, puts overwrote.
    int saw_value = 0, saw_absent = 0, overwrote = 0;
    for (auto& [key, ops] : by_key) {
      for (const RegisterOp& op : ops) {
        saw_value += op.kind == Kind::kGet && op.value.has_value();
        saw_absent += op.kind == Kind::kGet && !op.value.has_value();
        overwrote += op.kind == Kind::kPut && op.existed;
      }
    }
    EXPECT_GT(saw_value, 100);
    EXPECT_GT(saw_absent, 20);
    EXPECT_GT(overwrote, 100);
    for (auto& [key, ops] : by_key) {
      absl::Status s = CheckRegister(ops);
      EXPECT_TRUE(s.ok()) << key << " (" << ops.size() << " operations): " << s;
    }
    absl::StatusOr<TableScan> scan = kv.Scan(1);
    ASSERT_TRUE(scan.ok());
    absl::StrAppendFormat(&rounds, "%s round %d: %zu keys: %d gets saw a value, %d saw none, %d puts overwrote; longest chain %llu, "
                "longest run %llu, %llu tombstones\n",
                w.name, round, by_key.size(), saw_value, saw_absent, overwrote,
                static_cast<unsigned long long>(scan->longest_chain), static_cast<unsigned long long>(scan->longest_run),
                static_cast<unsigned long long>(scan->tombstones));
    if (w.neighbourhood == 2) {
      EXPECT_GE(scan->longest_chain, 2u);  // the chains the workload is for
    }
    if (absl::StartsWith(w.layout, "cuckoo")) {
      // The displacements the workloads are for: MIGRATEs ran among the operations (a
      // round may have none with 3 ways; the whole run has dozens: checked below).
      const cuckoo::UpdateStats stats = CuckooUpdateStats(kv);
      absl::StrAppendFormat(&rounds, "%s round %d: %llu migrations, %llu aborted, %llu PUT rollbacks, %llu retries, %llu full, "
                  "%llu reclaims (totals but the first)\n",
                  w.name, round, static_cast<unsigned long long>(stats.migrations - migrations_before),
                  static_cast<unsigned long long>(stats.migration_aborts),
                  static_cast<unsigned long long>(stats.rollbacks), static_cast<unsigned long long>(stats.retries),
                  static_cast<unsigned long long>(stats.full), static_cast<unsigned long long>(stats.reclaims));
      migrations_before = stats.migrations;
    }
    if (absl::StartsWith(w.layout, "linear")) {
      EXPECT_GE(scan->longest_run, 4u);  // runs over several slots (objects, for linear_short)
    }
    // This round's keys go, so the next round's start absent in a table of the same shape.
    for (auto& [key, ops] : by_key) ASSERT_TRUE(kv.Remove(1, key).ok());
  }
  if (absl::StartsWith(w.layout, "cuckoo")) {
    EXPECT_GE(migrations_before, 10u) << "MIGRATEs over the whole run";
  }
  if (HasFailure()) {
    std::fputs(rounds.c_str(), stdout);
  } else {
    std::printf("%s: %d rounds of %d operations per client, every key's history linearizable\n", w.name, w.rounds,
                ops_per_client);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LinearizabilityTest,
                         ::testing::Combine(::testing::ValuesIn(farm::testing::TestBackends()),
                                            ::testing::Values(kMixed, kChains, kLinear, kLinearShortReads, kChained,
                                                              kChainedOneSlot, kCuckoo, kCuckoo3)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                         });

}  // namespace
}  // namespace farm::kv
