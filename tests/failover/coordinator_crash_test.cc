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
#include "tests/failover/crash_cluster.h"
#include "tests/failover/transfer.h"
#include "tests/support/spawn.h"
#include "tests/support/tx_read_all.h"
#include "tests/support/zk_test_server.h"
#include "tools/common/compute_member.h"

namespace farm {
namespace {

using farm::testing::BankAccount;
using farm::testing::FileTail;
using farm::testing::kAmount;
using farm::testing::kInitialBalance;
using farm::testing::SpawnWithLog;

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

class CoordinatorCrashTest : public testing::CrashClusterTest {
 protected:
  CoordinatorCrashTest() : CrashClusterTest(FARM_NODE_BINARY, "crash", {"--replication=2"}) {}

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
    std::vector<BankAccount> now = ReadAccounts(accounts_, absl::Seconds(20));
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
