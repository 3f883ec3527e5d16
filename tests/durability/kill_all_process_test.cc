// A cluster of farm_node processes (real ZooKeeper, tcp fabric, --log_sync=always) whose
// every node is SIGKILLed at a random moment under load, then started again on its data
// directory, round after round (FARM_KILL_ROUNDS, default 10; the soak label runs more):
//   - a bank workload (transfers between accounts on every node, run by this process as
//     a compute-only member): the total holds after every restart, and every transfer
//     acknowledged before the kill is there (each account records, per client chain,
//     the last transfer that touched it);
//   - kv over RESP (farm_node --services=kv): every key acknowledged before the kill
//     reads back its value after the restart — the table's shards, found again through
//     the nodes' durable metadata, and every SET;
//   - a history: clients GET and SET ... GET a few keys over RESP across every round,
//     and each key's whole history (the operations the kills cut short as pending:
//     done or not, within their window) is linearizable (tests/kv/register_checker.h).
// Nodes checkpoint every 64 KiB of log, so kills land in checkpoints as well.
// Parameter: the replication factor (3, and 1: no backups, so every primary's own log
// carries its commits).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "farm/api/farm.h"
#include "farm/node/admin_protocol.h"
#include "membership/zk_client.h"
#include "membership/zk_membership.h"
#include "gtest/gtest.h"
#include "tests/support/node_cluster.h"
#include "tests/support/resp_client.h"
#include "tests/support/spawn.h"
#include "tests/support/tx_read_all.h"
#include "tests/kv/register_checker.h"
#include "tests/support/zk_test_server.h"
#include "tools/common/compute_member.h"

namespace farm {
namespace {

using farm::testing::FileTail;
using farm::testing::RespClient;
using farm::testing::SpawnWithLog;
using farm::testing::ZkTestServer;

constexpr int kNodes = 3;
constexpr int kAccountsPerNode = 4;
constexpr int kChains = 2;  // concurrent transfer clients
constexpr int kRegisterKeys = 4;      // keys of the history workload
constexpr int kRegisterClients = 2;   // its concurrent clients

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
constexpr int64_t kInitialBalance = 1000;

// An account object: balance, then per chain the sequence number of the last transfer
// of that chain that touched it.
struct Account {
  int64_t balance = 0;
  int64_t last[kChains] = {};
};
static_assert(sizeof(Account) == 8 * (1 + kChains));

std::string Encode(const Account& a) { return std::string(reinterpret_cast<const char*>(&a), sizeof(a)); }
Account Decode(const std::string& bytes) {
  Account a;
  std::memcpy(&a, bytes.data(), std::min(bytes.size(), sizeof(a)));
  return a;
}

int Rounds() {
  const char* env = std::getenv("FARM_KILL_ROUNDS");
  int rounds = 0;
  return env != nullptr && absl::SimpleAtoi(env, &rounds) && rounds > 0 ? rounds : 10;
}

class KillAllProcessTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-kill-all-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/secret") << "kill-all-process-test-secret-0123456";
    absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = std::move(*zk);
  }

  void TearDown() override {
    member_.reset();
    KillAll();
    // FARM_KEEP_FAILED=1: a failed run's data directories stay, for a look at the logs.
    if (HasFailure() && std::getenv("FARM_KEEP_FAILED") != nullptr) {
      std::printf("data kept in %s\n", dir_.c_str());
      return;
    }
    std::filesystem::remove_all(dir_);
  }

  std::string LogOf(NodeId id, int round) const { return absl::StrCat(dir_, "/node-", id, ".", round, ".log"); }

  void StartAll(int round) {
    for (NodeId id = 1; id <= kNodes; ++id) {
      std::vector<std::string> argv = {
          FARM_NODE_BINARY, absl::StrCat("--node_id=", id), "--cluster=killall", "--zookeeper=" + zk_->address(),
          "--secret_file=" + dir_ + "/secret", absl::StrCat("--data_dir=", dir_, "/node-", id), "--region_mb=32",
          "--threads=2", "--session_timeout_ms=1000", "--services=kv", "--kv_buckets=1024", "--fabric=tcp",
          absl::StrCat("--replication=", GetParam()), absl::StrCat("--min_members=", kNodes), "--log_sync=always",
          "--checkpoint_kb=64"};
      absl::StatusOr<pid_t> pid = SpawnWithLog(argv, LogOf(id, round));
      ASSERT_TRUE(pid.ok()) << pid.status();
      pids_[id] = *pid;
    }
    for (NodeId id = 1; id <= kNodes; ++id) {
      std::optional<uint16_t> port = WaitForRespPort(id, round, absl::Seconds(60));
      ASSERT_TRUE(port.has_value()) << "node " << id << " did not serve RESP\n" << Logs(round);
      ports_[id] = *port;
    }
  }

  void KillAll() {
    for (auto& [id, pid] : pids_) ::kill(pid, SIGKILL);
    for (auto& [id, pid] : pids_) ::waitpid(pid, nullptr, 0);
    pids_.clear();
  }

  std::optional<uint16_t> WaitForRespPort(NodeId id, int round, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (std::optional<uint16_t> port = testing::LoggedRespPort(LogOf(id, round))) return port;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return std::nullopt;
  }

  // The node's admin address, from its log's "ready; admin port A" line.
  std::optional<std::string> AdminAddress(NodeId id, int round) {
    return testing::LoggedAdminAddress(LogOf(id, round));
  }

  std::string Logs(int round) {
    std::string out;
    for (NodeId id = 1; id <= kNodes; ++id) {
      absl::StrAppend(&out, "--- node ", id, "\n", FileTail(LogOf(id, round), 2000));
    }
    return out;
  }

  void JoinMember() {
    tools::ComputeMemberOptions o;
    o.zookeeper = zk_->address();
    o.cluster = "killall";
    o.secret_file = dir_ + "/secret";
    o.fabric = "tcp";
    o.threads = kChains;
    absl::StatusOr<std::unique_ptr<tools::ComputeMember>> m = tools::ComputeMember::Join(o);
    ASSERT_TRUE(m.ok()) << m.status();
    member_ = std::move(*m);
  }

  // Reads every account (retrying while recovery settles in-doubt transactions).
  std::vector<Account> ReadAccounts() {
    absl::StatusOr<std::vector<std::string>> seen;
    for (int attempt = 0; attempt < 400; ++attempt) {
      seen = testing::ReadAllInOneTx(member_->node(), accounts_);
      if (seen.ok()) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    EXPECT_TRUE(seen.ok()) << seen.status();
    std::vector<Account> out;
    if (seen.ok()) {
      for (const std::string& s : *seen) out.push_back(Decode(s));
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<ZkTestServer> zk_;
  std::map<NodeId, pid_t> pids_;
  std::map<NodeId, uint16_t> ports_;
  std::unique_ptr<tools::ComputeMember> member_;
  std::vector<FatPtr> accounts_;
};

// One transfer of `amount` from account a to b by `chain` with sequence `seq`.
absl::Status Transfer(node::Node& member, size_t chain, FatPtr a, FatPtr b, int64_t amount, int64_t seq) {
  return testing::RunInContext<absl::Status>(
      member,
      [=](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        auto objs = std::make_shared<std::vector<ObjBuf*>>(2, nullptr);
        auto left = std::make_shared<int>(2);
        auto failed = std::make_shared<absl::Status>();
        for (int i = 0; i < 2; ++i) {
          txRead(*tx, i == 0 ? a : b, [=](absl::StatusOr<ObjBuf*> o) mutable {
            if (o.ok()) {
              (*objs)[i] = *o;
            } else {
              failed->Update(o.status());
            }
            if (--*left > 0) return;
            if (!failed->ok()) {
              txAbort(*tx);
              return finish(*failed);
            }
            for (int j = 0; j < 2; ++j) {
              Account acc = Decode(std::string((*objs)[j]->data().data(), (*objs)[j]->data().size()));
              acc.balance += j == 0 ? -amount : amount;
              acc.last[chain] = seq;
              const std::string bytes = Encode(acc);
              std::copy(bytes.begin(), bytes.end(), (*objs)[j]->data().begin());
              failed->Update(txWrite(*tx, (*objs)[j]));
            }
            if (!failed->ok()) {
              txAbort(*tx);
              return finish(*failed);
            }
            txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
          });
        }
      },
      chain);
}

// Every node is killed, and the compute-only member outlives them long enough to manage
// the cluster and publish a configuration without any of them (no member that holds
// data: it places no region). Restarted, each node applies that configuration first:
// it takes its regions back with the next one, and every account reads back. (Before,
// the adoption failed on it, dropped the regions it had taken from the log, and the
// node served fresh ones: reads answered "node N is not the primary of region R".)
TEST_P(KillAllProcessTest, NodesRestartedAfterAComputeOnlyManagerDroppedThemAllServeTheirData) {
  StartAll(0);
  JoinMember();
  absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> regions = member_->RegionsByPrimary();
  ASSERT_TRUE(regions.ok()) << regions.status();
  Account initial;
  initial.balance = kInitialBalance;
  for (const auto& [primary, ids] : *regions) {
    absl::StatusOr<FatPtr> p = testing::CreateObjectInOneTx(member_->node(), Encode(initial), Addr(ids.front(), 0));
    ASSERT_TRUE(p.ok()) << p.status();
    accounts_.push_back(*p);
  }
  KillAll();
  auto only_compute = [&] {
    std::shared_ptr<const membership::Configuration> c = member_->node().membership().current();
    return c != nullptr && std::none_of(c->members.begin(), c->members.end(),
                                        [](const membership::Member& m) { return !m.compute_only; });
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!only_compute() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(only_compute()) << "the member published no configuration without the nodes";
  // A candidate older than the restarted nodes' (a session of this test's) keeps them from
  // managing until it goes: each applies that configuration first, and stays in it.
  membership::ZkClient::Options zo;
  zo.hosts = zk_->address();
  absl::StatusOr<std::unique_ptr<membership::ZkClient>> candidate = membership::ZkClient::Connect(zo, nullptr);
  ASSERT_TRUE(candidate.ok()) << candidate.status();
  ASSERT_TRUE((*candidate)
                  ->Create(membership::ZkMembership::Root("killall") + "/election/m-", "999/0",
                           membership::ZkNodeMode::kEphemeralSequential)
                  .ok());
  member_->Leave();
  member_.reset();
  std::thread release([&candidate] {
    absl::SleepFor(absl::Seconds(2));
    candidate->reset();  // its session closes: a restarted node manages, and publishes
  });
  StartAll(1);
  release.join();
  JoinMember();
  const std::vector<Account> seen = ReadAccounts();
  ASSERT_EQ(seen.size(), accounts_.size()) << Logs(1);
  for (const Account& a : seen) EXPECT_EQ(a.balance, kInitialBalance);
}

TEST_P(KillAllProcessTest, EveryAcknowledgedCommitSurvivesKillingEveryNode) {
  StartAll(0);
  JoinMember();
  // Accounts on every node's regions.
  absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> regions = member_->RegionsByPrimary();
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), static_cast<size_t>(kNodes));
  Account initial;
  initial.balance = kInitialBalance;
  for (const auto& [primary, ids] : *regions) {
    for (int i = 0; i < kAccountsPerNode; ++i) {
      absl::StatusOr<FatPtr> p = testing::CreateObjectInOneTx(member_->node(), Encode(initial), Addr(ids.front(), 0));
      ASSERT_TRUE(p.ok()) << p.status();
      accounts_.push_back(*p);
    }
  }
  const int64_t total = kInitialBalance * static_cast<int64_t>(accounts_.size());
  std::map<std::string, std::string> kv_acked;  // every key acknowledged so far, its value
  absl::BitGen gen;
  const int rounds = Rounds();
  // Per client chain (one sequential client each), per account: the last acknowledged
  // transfer touching it, and later ones whose outcome is unknown.
  struct ChainBook {
    std::map<size_t, int64_t> acked;
    std::map<size_t, std::set<int64_t>> unknown;
    int64_t acked_transfers = 0;
  };
  std::vector<ChainBook> books(kChains);
  // The history workload's operations, per key, across every round.
  std::vector<std::vector<kv::testing::RegisterOp>> history(kRegisterKeys);
  absl::Mutex history_mu;
  for (int round = 1; round <= rounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    // Load: kChains transfer chains and one RESP writer, until the kill.
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int c = 0; c < kChains; ++c) {
      threads.emplace_back([&, c] {
        absl::BitGen g;
        ChainBook& book = books[c];
        int64_t seq = (int64_t{round} << 32);
        while (!stop.load()) {
          const size_t a = absl::Uniform<size_t>(g, 0, accounts_.size());
          size_t b = absl::Uniform<size_t>(g, 0, accounts_.size() - 1);
          if (b >= a) ++b;
          ++seq;
          absl::Status s = Transfer(member_->node(), c, accounts_[a], accounts_[b], absl::Uniform(g, 1, 50), seq);
          for (size_t i : {a, b}) {
            if (s.ok()) {
              book.acked[i] = seq;
              book.unknown[i].clear();
            } else if (!absl::IsAborted(s) && !absl::IsFailedPrecondition(s)) {
              book.unknown[i].insert(seq);  // the kill, a timeout: it may have committed
            }
          }
          if (s.ok()) ++book.acked_transfers;
        }
      });
    }
    std::map<std::string, std::string> kv_this_round;
    threads.emplace_back([&] {
      std::optional<RespClient> client = RespClient::Connect(ports_[1 + round % kNodes]);
      if (!client) return;
      for (int i = 0; !stop.load(); ++i) {
        const std::string key = absl::StrCat("key-", round, "-", i);
        const std::string value = absl::StrCat("value-", round, "-", i, "-", std::string(i % 40, 'x'));
        if (client->Call({"SET", key, value}) != "+OK") break;
        kv_this_round[key] = value;
      }
    });
    for (int c = 0; c < kRegisterClients; ++c) {
      threads.emplace_back([&, c] {
        using Kind = kv::testing::RegisterOp::Kind;
        absl::BitGen g;
        std::optional<RespClient> client = RespClient::Connect(ports_[1 + (round + c) % kNodes]);
        if (!client) return;
        for (int i = 0; !stop.load(); ++i) {
          const int key = absl::Uniform(g, 0, kRegisterKeys);
          const std::string name = absl::StrCat("register-", key);
          kv::testing::RegisterOp op;
          op.start_ns = NowNs();
          std::string reply;
          if (absl::Bernoulli(g, 0.5)) {
            op.kind = Kind::kGet;
            reply = client->Call({"GET", name});
            op.value = reply == "(nil)" ? std::nullopt : std::optional<std::string>(reply);
          } else {
            op.kind = Kind::kPut;
            op.value = absl::StrCat("r", round, "c", c, "i", i);
            reply = client->Call({"SET", name, *op.value, "GET"});  // the old value: did it exist
            op.existed = reply != "(nil)";
          }
          op.end_ns = NowNs();
          // Values are "r..."; anything else (an error, a closed connection) leaves the
          // outcome unknown: the kill came, or the cluster refused while it went.
          op.pending = reply != "(nil)" && reply.rfind("r", 0) != 0;
          absl::MutexLock lock(&history_mu);
          history[key].push_back(std::move(op));
          if (history[key].back().pending) break;  // the cluster is going
        }
      });
    }
    absl::SleepFor(absl::Milliseconds(absl::Uniform(gen, 300, 1500)));
    KillAll();  // every node, at once
    stop.store(true);
    for (std::thread& t : threads) t.join();
    member_->Leave();
    member_.reset();
    kv_acked.insert(kv_this_round.begin(), kv_this_round.end());

    StartAll(round);
    JoinMember();
    std::vector<Account> seen = ReadAccounts();
    ASSERT_EQ(seen.size(), accounts_.size()) << Logs(round);
    int64_t sum = 0;
    for (size_t i = 0; i < seen.size(); ++i) {
      sum += seen[i].balance;
      for (int c = 0; c < kChains; ++c) {
        // The account holds the chain's last acknowledged transfer touching it, or one
        // after it whose outcome the client could not know; never an older one.
        const ChainBook& book = books[c];
        auto acked = book.acked.find(i);
        if (acked == book.acked.end()) continue;
        auto unknown = book.unknown.find(i);
        const int64_t held = seen[i].last[c];
        EXPECT_TRUE(held == acked->second || (unknown != book.unknown.end() && unknown->second.contains(held)))
            << "account " << i << " chain " << c << " holds transfer " << held << ", acknowledged "
            << acked->second;
      }
    }
    EXPECT_EQ(sum, total) << "money was created or destroyed across the restart";
    // Every acknowledged key, through a node chosen per key.
    std::map<NodeId, RespClient> clients;
    for (NodeId id = 1; id <= kNodes; ++id) {
      std::optional<RespClient> c = RespClient::Connect(ports_[id]);
      ASSERT_TRUE(c.has_value());
      clients.emplace(id, std::move(*c));
    }
    // This round's keys, and a sample of the earlier rounds' (reading them all every
    // round would make the soak quadratic).
    std::vector<std::pair<std::string, std::string>> to_check(kv_this_round.begin(), kv_this_round.end());
    for (const auto& [key, value] : kv_acked) {
      if (!kv_this_round.contains(key) && absl::Bernoulli(gen, 2000.0 / kv_acked.size())) {
        to_check.emplace_back(key, value);
      }
    }
    int checked = 0, missing = 0;
    std::string first_missing;
    for (const auto& [key, value] : to_check) {
      std::string got;
      for (int attempt = 0; attempt < 100; ++attempt) {
        got = clients.at(1 + checked % kNodes).Call({"GET", key});
        if (got.rfind("-", 0) != 0) break;  // an error while recovery settles: again
        absl::SleepFor(absl::Milliseconds(50));
      }
      if (got != value && missing++ == 0) first_missing = absl::StrCat(key, " reads ", got, ", not ", value);
      ++checked;
    }
    EXPECT_EQ(missing, 0) << missing << " of " << checked << " keys acknowledged before a kill are not there; first: "
                          << first_missing << "\n" << Logs(round);
    std::printf("round %d: %zu accounts hold %lld; %d acknowledged keys read back\n", round, seen.size(),
                static_cast<long long>(sum), checked);
    if (::testing::Test::HasFailure()) break;
  }
  // What farm_admin storage shows: every node started rounds + 1 times on its data and
  // replayed its log at the last start, from a checkpoint (64 KiB of log per checkpoint:
  // the kills land in checkpoints too).
  for (NodeId id = 1; id <= kNodes && !::testing::Test::HasFailure(); ++id) {
    std::optional<std::string> admin = AdminAddress(id, rounds);
    ASSERT_TRUE(admin.has_value());
    node::AdminRequest request;
    request.set_format(node::kAdminFormat);
    request.set_command(node::AdminRequest::STATS);
    absl::StatusOr<node::AdminResponse> stats = node::AdminCall(*admin, request, absl::Seconds(5));
    ASSERT_TRUE(stats.ok()) << stats.status();
    const node::LogStats& log = stats->stats().log();
    EXPECT_EQ(log.policy(), "always");
    EXPECT_EQ(log.boot(), static_cast<uint32_t>(rounds + 1));
    EXPECT_GT(log.replayed_transactions(), 0u);
    EXPECT_GT(log.file_bytes(), 0u);
    EXPECT_TRUE(log.error().empty()) << log.error();
    EXPECT_TRUE(log.has_checkpoint()) << "node " << id << " never took a checkpoint";
    EXPECT_TRUE(log.checkpoint_error().empty()) << log.checkpoint_error();
  }
  // Each key's history, across every kill: a pending operation took effect before any
  // later operation on its key completed (recovery settles it before the key can be read
  // or written), or not at all.
  size_t history_ops = 0;
  for (int key = 0; key < kRegisterKeys && !::testing::Test::HasFailure(); ++key) {
    std::vector<kv::testing::RegisterOp>& ops = history[key];
    for (kv::testing::RegisterOp& op : ops) {
      if (!op.pending) continue;
      int64_t settled = std::numeric_limits<int64_t>::max() / 2;
      for (const kv::testing::RegisterOp& later : ops) {
        if (!later.pending && later.start_ns > op.end_ns) settled = std::min(settled, later.end_ns);
      }
      op.end_ns = settled;
    }
    history_ops += ops.size();
    absl::Status linearizable = kv::testing::CheckRegister(ops);
    EXPECT_TRUE(linearizable.ok()) << "register-" << key << ": " << linearizable;
  }
  std::printf("history: %zu operations on %d keys across %d kills, linearizable\n", history_ops, kRegisterKeys, rounds);
  int64_t transfers_acked = 0;
  for (const ChainBook& book : books) transfers_acked += book.acked_transfers;
  std::printf("%d rounds, %lld transfers and %zu keys acknowledged in all\n", rounds,
              static_cast<long long>(transfers_acked), kv_acked.size());
  EXPECT_GT(transfers_acked, 0);
  EXPECT_GT(kv_acked.size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Replication, KillAllProcessTest, ::testing::Values(3, 1),
                         [](const auto& info) { return absl::StrCat("r", info.param); });

}  // namespace
}  // namespace farm
