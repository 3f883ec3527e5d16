// Linearizability of concurrent get/put/remove from every node: 3 nodes x 2 threads x 4
// sequential clients on a small table (H = 4, chains, displacement), plus churn on other
// keys that shares the checked keys' buckets and chains, so lookups meet moves, chain
// collapses and replaced values. Every key's history is checked by the register checker.
// Also unit tests of the checker itself.
#include <atomic>
#include <cstdio>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/base/mutex.h"
#include "gtest/gtest.h"
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

struct Client {
  NodeId node;
  size_t thread;
  int id;
  int remaining;
  std::mt19937 rng;
  std::vector<std::pair<std::string, RegisterOp>> history;
};

class LinearizabilityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LinearizabilityTest, ConcurrentGetPutRemoveFromEveryNodeAreLinearizable) {
  TableOptions options;
  options.layout.neighbourhood = 4;
  options.buckets_per_node = 6;
  absl::StatusOr<std::unique_ptr<KvCluster>> started = KvCluster::Start(GetParam(), 3, "kv_linear", options);
  ASSERT_TRUE(started.ok()) << started.status();
  KvCluster& kv = **started;
  constexpr int kKeys = 12;
  constexpr int kClientsPerThread = 4;
  const int ops_per_client = GetParam() == "shm" ? 500 : 250;
  std::vector<std::unique_ptr<Client>> clients;
  for (NodeId n = 1; n <= 3; ++n) {
    for (size_t t = 0; t < 2; ++t) {
      for (int c = 0; c < kClientsPerThread; ++c) {
        const int id = static_cast<int>(clients.size());
        clients.push_back(std::make_unique<Client>(Client{n, t, id, ops_per_client, std::mt19937(id), {}}));
      }
    }
  }
  std::atomic<int> running{static_cast<int>(clients.size())};
  Notification all_done;  // TSan-visible, unlike Abseil's build
  // One step of a client: the next operation, recorded when it completes.
  struct Driver {
    KvCluster* kv;
    std::atomic<int>* running;
    Notification* all_done;
    void Step(Client* c) {
      if (c->remaining-- == 0) {
        if (running->fetch_sub(1) == 1) all_done->Notify();
        return;
      }
      TableClient& client = kv->client(c->node, c->thread);
      const int dice = static_cast<int>(c->rng() % 100);
      const bool churn = dice >= 90;  // keys outside the checked set, same buckets
      const std::string key = churn ? absl::StrCat("churn-", c->rng() % 40) : absl::StrCat("key-", c->rng() % kKeys);
      const int64_t start = NowNs();
      if (dice < 45) {
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
      const bool remove = dice < 60 || (churn && dice % 2 == 0);
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
  Driver driver{&kv, &running, &all_done};
  for (auto& c : clients) {
    Client* client = c.get();
    kv.node(client->node).loop(client->thread).Post([&driver, client] { driver.Step(client); });
  }
  ASSERT_TRUE(all_done.WaitForNotificationWithTimeout(absl::Seconds(120)));
  std::map<std::string, std::vector<RegisterOp>> by_key;
  size_t total = 0;
  for (auto& c : clients) {
    for (auto& [key, op] : c->history) {
      by_key[key].push_back(op);
      ++total;
    }
  }
  EXPECT_EQ(total, clients.size() * ops_per_client);
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
  std::printf("%zu operations on %zu keys: %d gets saw a value, %d saw none, %d puts overwrote\n", total,
              by_key.size(), saw_value, saw_absent, overwrote);
  for (auto& [key, ops] : by_key) {
    absl::Status s = CheckRegister(ops);
    EXPECT_TRUE(s.ok()) << key << " (" << ops.size() << " operations): " << s;
  }
  absl::StatusOr<TableScan> scan = kv.Scan(1);
  ASSERT_TRUE(scan.ok());
  EXPECT_GT(scan->overflow_blocks + scan->pairs, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, LinearizabilityTest, ::testing::ValuesIn(farm::testing::TestBackends()));

}  // namespace
}  // namespace farm::kv
