// A coordinator killed half-way through a distributed commit (issue 17, transaction
// recovery). A cluster of farm_node processes (real ZooKeeper, r = 2) holds two
// accounts with different primaries. A separate process (crash_coordinator.cc) joins as a
// compute-only member, transfers between them and SIGKILLs itself at a chosen step of
// the two-phase commit — a deterministic seam (tx::TxOptions::commit_step_hook) that
// forces each interleaving instead of hoping a random kill finds it. Once the
// configuration drops the dead coordinator, recovery must settle the transaction on
// every participant the same way:
//   - killed after PREPARE was answered, or after validation but before any
//     COMMIT-BACKUP: no replica logged a commit, so it aborts (the accounts unchanged);
//   - killed once every backup acknowledged COMMIT-BACKUP, or after COMMIT-PRIMARY was
//     sent: the backups logged the commit, so it commits everywhere (both accounts moved
//     and stamped);
//   - killed right after sending COMMIT-BACKUP: either outcome, the same everywhere;
// and in every case its locks are released: the next transfer on the same accounts
// commits. The bank total holds throughout. Parameter: the fabric (shm, tcp).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/failover/transfer.h"
#include "tests/support/spawn.h"
#include "tests/support/tx_read_all.h"
#include "tests/support/zk_test_server.h"
#include "tools/common/compute_member.h"

namespace farm {
namespace {

using farm::testing::BankAccount;
using farm::testing::FileTail;
using farm::testing::SpawnWithLog;
using farm::testing::ZkTestServer;

constexpr int kNodes = 3;
constexpr int64_t kInitialBalance = 1000;
constexpr int64_t kAmount = 7;

enum class Outcome { kAborts, kCommits, kEither };
struct Case {
  const char* step;
  Outcome outcome;  // what recovery must decide
};
constexpr Case kCases[] = {
    {"prepared", Outcome::kAborts},
    {"decided", Outcome::kAborts},
    // Sent, not yet acknowledged: the messages may or may not have left the dying
    // process (tcp queues them), so either outcome is right — the same on every replica.
    {"backups-sent", Outcome::kEither},
    {"backups", Outcome::kCommits},
    {"primaries", Outcome::kCommits},
};

class CoordinatorCrashTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-coordinator-crash-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/secret") << "coordinator-crash-test-secret-0123456";
    absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = std::move(*zk);
    for (NodeId id = 1; id <= kNodes; ++id) {
      std::vector<std::string> argv = {
          FARM_NODE_BINARY, absl::StrCat("--node_id=", id), "--cluster=crash", "--zookeeper=" + zk_->address(),
          "--secret_file=" + dir_ + "/secret", absl::StrCat("--data_dir=", dir_, "/node-", id), "--region_mb=32",
          "--threads=1", "--session_timeout_ms=1000", "--fabric=" + GetParam(), "--replication=2",
          absl::StrCat("--min_members=", kNodes), "--log_sync=always"};
      absl::StatusOr<pid_t> pid = SpawnWithLog(argv, LogOf(id));
      ASSERT_TRUE(pid.ok()) << pid.status();
      pids_.push_back(*pid);
    }
    tools::ComputeMemberOptions o;
    o.zookeeper = zk_->address();
    o.cluster = "crash";
    o.secret_file = dir_ + "/secret";
    o.fabric = GetParam();
    o.threads = 1;
    o.join_timeout = absl::Seconds(60);
    absl::StatusOr<std::unique_ptr<tools::ComputeMember>> m = tools::ComputeMember::Join(o);
    ASSERT_TRUE(m.ok()) << m.status() << Logs();
    member_ = std::move(*m);
  }

  void TearDown() override {
    member_.reset();
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
    if (HasFailure() && std::getenv("FARM_KEEP_FAILED") != nullptr) {
      std::printf("data kept in %s\n", dir_.c_str());
      return;
    }
    std::filesystem::remove_all(dir_);
  }

  std::string LogOf(NodeId id) const { return absl::StrCat(dir_, "/node-", id, ".log"); }
  std::string Logs() const {
    std::string out;
    for (NodeId id = 1; id <= kNodes; ++id) absl::StrAppend(&out, "\n--- node ", id, "\n", FileTail(LogOf(id), 3000));
    return out;
  }

  // Two accounts whose regions have different primaries.
  void CreateAccounts() {
    // The nodes create their first regions once they see each other: wait for two.
    absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> regions;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    for (;;) {
      regions = member_->RegionsByPrimary();
      const size_t holding = !regions.ok() ? 0
                             : std::count_if(regions->begin(), regions->end(),
                                             [](const auto& r) { return !r.second.empty(); });
      if (holding >= 2 || absl::Now() > deadline) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ASSERT_TRUE(regions.ok()) << regions.status();
    BankAccount initial;
    initial.balance = kInitialBalance;
    for (const auto& [primary, ids] : *regions) {
      if (ids.empty() || accounts_.size() == 2) continue;
      absl::StatusOr<FatPtr> p =
          testing::CreateObjectInOneTx(member_->node(), testing::EncodeAccount(initial), Addr(ids.front(), 0));
      ASSERT_TRUE(p.ok()) << p.status();
      accounts_.push_back(*p);
    }
    ASSERT_EQ(accounts_.size(), 2u) << "fewer than two nodes are primary of a region";
    std::ofstream out(dir_ + "/accounts");
    for (const FatPtr& p : accounts_) out << p.addr.raw() << " " << p.size << " " << p.incarnation << "\n";
  }

  // Both accounts, read in one transaction once recovery released them (bounded).
  std::vector<BankAccount> ReadAccounts() {
    absl::StatusOr<std::vector<std::string>> seen;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    do {
      seen = testing::ReadAllInOneTx(member_->node(), accounts_);
      if (seen.ok()) break;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < deadline);
    EXPECT_TRUE(seen.ok()) << "the accounts stayed unreadable for 20 s: " << seen.status() << Logs();
    std::vector<BankAccount> out;
    if (seen.ok()) {
      for (const std::string& s : *seen) out.push_back(testing::DecodeAccount(s));
    }
    return out;
  }

  // Waits until the configuration no longer lists `node` (its session expired).
  bool WaitUntilGone(NodeId node, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      auto config = member_->node().membership().current();
      if (config != nullptr && !config->Contains(node)) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  std::string dir_;
  std::unique_ptr<ZkTestServer> zk_;
  std::vector<pid_t> pids_;
  std::unique_ptr<tools::ComputeMember> member_;
  std::vector<FatPtr> accounts_;
};

TEST_P(CoordinatorCrashTest, RecoveryDecidesWhatTheReplicasLogged) {
  CreateAccounts();
  int64_t expected[2] = {kInitialBalance, kInitialBalance};
  int64_t seq = 0;
  for (const Case& c : kCases) {
    SCOPED_TRACE(absl::StrCat("coordinator killed at step '", c.step, "'"));
    ++seq;
    const std::string log = absl::StrCat(dir_, "/coordinator-", c.step, ".log");
    std::vector<std::string> argv = {CRASH_COORDINATOR_BINARY, "--zookeeper=" + zk_->address(), "--cluster=crash",
                                     "--secret_file=" + dir_ + "/secret", "--fabric=" + GetParam(),
                                     "--accounts=" + dir_ + "/accounts", absl::StrCat("--step=", c.step),
                                     absl::StrCat("--amount=", kAmount), absl::StrCat("--seq=", seq)};
    absl::StatusOr<pid_t> pid = SpawnWithLog(argv, log);
    ASSERT_TRUE(pid.ok()) << pid.status();
    int status = 0;
    ASSERT_EQ(::waitpid(*pid, &status, 0), *pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the coordinator did not die at the step (status " << status << "):\n" << FileTail(log, 3000);
    // Its node id: a compute member's is derived from its pid (compute_member.h).
    const NodeId coordinator = 1000000 + static_cast<NodeId>(*pid) % 48000;
    ASSERT_TRUE(WaitUntilGone(coordinator, absl::Seconds(15)))
        << "the configuration still lists the dead coordinator " << coordinator << Logs();
    std::vector<BankAccount> now = ReadAccounts();
    ASSERT_EQ(now.size(), 2u);
    EXPECT_EQ(now[0].balance + now[1].balance, 2 * kInitialBalance) << "money created or destroyed";
    // Both accounts tell the same story: the transfer happened on both or on neither.
    EXPECT_EQ(now[0].last == seq, now[1].last == seq) << "a partial commit";
    const bool committed = now[0].last == seq;
    if (c.outcome != Outcome::kEither) {
      EXPECT_EQ(committed, c.outcome == Outcome::kCommits)
          << "recovery must " << (c.outcome == Outcome::kCommits ? "commit" : "abort") << " it";
    }
    if (committed) {
      expected[0] -= kAmount;
      expected[1] += kAmount;
    }
    EXPECT_EQ(now[0].balance, expected[0]);
    EXPECT_EQ(now[1].balance, expected[1]);
    std::printf("coordinator killed at '%s': recovery %s the transfer\n", c.step,
                committed ? "committed" : "aborted");
    // Its locks are gone: a transfer on the same accounts commits (retried while the
    // cluster settles).
    ++seq;
    absl::Status next;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    do {
      next = testing::Transfer(member_->node(), accounts_[1], accounts_[0], 1, seq);
      if (next.ok()) break;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < deadline);
    ASSERT_TRUE(next.ok()) << "a transfer after recovery did not commit: " << next << Logs();
    expected[0] += 1;
    expected[1] -= 1;
  }
}

INSTANTIATE_TEST_SUITE_P(Fabrics, CoordinatorCrashTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
