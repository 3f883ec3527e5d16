// A node whose log fails for good leaves the cluster, and the cluster goes on without
// it. A cluster of three farm_node processes (real ZooKeeper, r = 3) holds two accounts
// in one region; a compute-only member transfers between them (a single-machine commit
// at the region's primary, replicated to both backups). Every node runs with the seam
// --test_fault=log-fails-on-signal (farm/node/test_faults.h): SIGUSR1 makes every later
// sync of that node's disk fail, so the transfer's commit record cannot be made durable
// there. A node that cannot log must not hold replicas: it leaves (farm_node exits 3),
// and then
//   - a backup's failure: the primary and the other backup logged the transfer, so it
//     commits (the primary stops waiting for a backup that left);
//   - the primary's failure: both backups logged it, so the new primary (the first
//     backup) finishes it at failover;
// in both cases the transfer is there whole (the bank total unchanged) and the region
// takes writes again. Then, as an operator would, the backup is started again: on its
// old directory it is refused (the cluster moved on without it), on an empty one it
// joins as a new member and the region commits with it. Before the fail-stop the failed
// node stayed a member: the commit stayed "outcome unknown" with its objects locked (the
// primary's failure) or waiting for the backup (a backup's failure), for as long as the
// node ran. Parameter: the fabric.
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "membership/placement.h"
#include "tests/failover/crash_cluster.h"
#include "tests/failover/transfer.h"
#include "tests/support/spawn.h"
#include "tests/support/tx_read_all.h"

namespace farm {
namespace {

using farm::testing::BankAccount;
using farm::testing::kAmount;
using farm::testing::kInitialBalance;

constexpr int kExitLogFailed = 3;  // farm_node's exit status after its log failed

class LogFailureTest : public testing::CrashClusterTest {
 protected:
  LogFailureTest() : CrashClusterTest(FARM_NODE_BINARY, "logfail", {"--replication=3", "--test_fault=log-fails-on-signal"}) {}

  // Fails every later sync of node `node`'s disk; true once the node says so.
  bool FailDiskOf(NodeId node) {
    ::kill(pids_[node - 1], SIGUSR1);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      if (absl::StrContains(testing::FileTail(LogOf(node), 4000), "test fault triggered")) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  // Fails the disk of the region's node `victim` (0: its primary; i: its i-th backup)
  // under a transfer, and checks that the node leaves and the transfer commits.
  void TransferWhileTheLogOfOneReplicaFails(size_t victim) {
    const RegionId region = SomeRegion();
    ASSERT_NE(region, kNullRegion);
    accounts_ = CreateAccounts(region, 2, kInitialBalance);
    const std::vector<FatPtr>& accounts = accounts_;
    ASSERT_EQ(accounts.size(), 2u) << "the accounts must share a region";
    absl::StatusOr<membership::ReplicaSet> replicas = ReplicasOf(region);
    ASSERT_TRUE(replicas.ok()) << replicas.status();
    ASSERT_EQ(replicas->backups().size(), 2u) << replicas->ToString();
    const NodeId failing = victim == 0 ? replicas->primary() : replicas->backups()[victim - 1];
    failed_ = failing;
    std::printf("region %u: %s; node %u's disk fails\n", region, replicas->ToString().c_str(), failing);
    ASSERT_TRUE(FailDiskOf(failing)) << "node " << failing << " did not arm the seam" << Logs();

    // Acknowledged, or "outcome unknown" while the node was still leaving; never refused:
    // two of its three replicas logged it.
    const absl::Status transfer = testing::Transfer(member_->node(), accounts[0], accounts[1], kAmount, /*seq=*/1);
    EXPECT_TRUE(transfer.ok() || absl::IsDeadlineExceeded(transfer) || absl::IsUnavailable(transfer))
        << "refused: " << transfer;
    EXPECT_EQ(ReapExited(failing, absl::Seconds(20)), kExitLogFailed)
        << "node " << failing << " did not stop when its log failed" << Logs();
    ASSERT_TRUE(WaitUntilGone(failing, absl::Seconds(15))) << "the configuration still lists node " << failing
                                                           << Logs();
    // The whole log (a failed primary logs a retry of its append every 100 ms until it stops).
    const std::string tail = testing::FileTail(LogOf(failing), 16 << 20);
    EXPECT_TRUE(absl::StrContains(tail, "leaving the cluster")) << tail;
    EXPECT_TRUE(absl::StrContains(tail, "sync failed")) << tail;

    // Acknowledged: there at once. Outcome unknown: there once the primary (or, for the
    // primary's failure, the new one) has settled it — until then a lock-free read may
    // see the accounts as they were (the commit's serialization point is its apply).
    std::vector<BankAccount> now = ReadAccounts(accounts, absl::Seconds(20));
    for (const absl::Time settled_by = absl::Now() + absl::Seconds(20);
         !transfer.ok() && now.size() == 2 && now[0].last != 1 && absl::Now() < settled_by;) {
      absl::SleepFor(absl::Milliseconds(20));
      now = ReadAccounts(accounts, absl::Seconds(20));
    }
    ASSERT_EQ(now.size(), 2u);
    EXPECT_EQ(now[0].balance + now[1].balance, 2 * kInitialBalance) << "money created or destroyed";
    EXPECT_EQ(now[0].last, 1) << "the transfer two replicas logged is missing" << Logs();
    EXPECT_EQ(now[1].last, 1) << "the transfer two replicas logged is missing" << Logs();
    EXPECT_EQ(now[0].balance, kInitialBalance - kAmount);

    // The region takes writes again, on the replicas left.
    const absl::Status again = TransferUntilCommitted(accounts[1], accounts[0], 2 * kAmount, /*seq=*/2);
    ASSERT_TRUE(again.ok()) << "a transfer after the node left did not commit: " << again << Logs();
    now = ReadAccounts(accounts, absl::Seconds(5));
    ASSERT_EQ(now.size(), 2u);
    EXPECT_EQ(now[0].balance, kInitialBalance + kAmount);
    EXPECT_EQ(now[1].balance, kInitialBalance - kAmount);
    EXPECT_EQ(now[0].last, 2);
    EXPECT_EQ(now[1].last, 2);
  }

  // Transfer `seq`, tried again (for 30 s) while refused or while its outcome is unknown
  // and a read does not show it: never applied twice.
  absl::Status TransferUntilCommitted(FatPtr from, FatPtr to, int64_t amount, int64_t seq) {
    absl::Status s;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    do {
      s = testing::Transfer(member_->node(), from, to, amount, seq);
      if (s.ok()) return s;
      absl::SleepFor(absl::Milliseconds(50));
      absl::StatusOr<std::vector<std::string>> seen = testing::ReadAllInOneTx(member_->node(), {from});
      if (seen.ok() && testing::DecodeAccount((*seen)[0]).last == seq) return absl::OkStatus();
    } while (absl::Now() < deadline);
    return s;
  }

  std::vector<FatPtr> accounts_;
  NodeId failed_ = 0;  // the node whose disk failed
};

TEST_P(LogFailureTest, ABackupWhoseLogFailsLeavesAndTheCommitGoesOn) {
  TransferWhileTheLogOfOneReplicaFails(2);
  if (HasFatalFailure()) return;
  // What an operator does next. Started again on the same directory, the node is refused:
  // the cluster moved its copies on without it.
  const NodeId failed = failed_;
  StartNode(failed, 1, {"--replication=3"});
  EXPECT_EQ(ReapExited(failed, absl::Seconds(30)), 1) << "a removed node started on its stale data" << Logs();
  EXPECT_TRUE(absl::StrContains(testing::FileTail(LogOf(failed), 3000), "Start it with an empty data directory"))
      << testing::FileTail(LogOf(failed), 3000);
  // On an empty one (the disk replaced) it joins as a new member, and takes copies again.
  std::filesystem::remove_all(absl::StrCat(dir_, "/node-", failed));
  StartNode(failed, 1, {"--replication=3"});
  const absl::Time joined_by = absl::Now() + absl::Seconds(30);
  auto listed = [&] {
    auto config = member_->node().membership().current();
    return config != nullptr && config->Contains(failed);
  };
  while (!listed() && absl::Now() < joined_by) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(listed()) << "node " << failed << " did not rejoin" << Logs();
  const absl::Status again = TransferUntilCommitted(accounts_[0], accounts_[1], kAmount, /*seq=*/3);
  ASSERT_TRUE(again.ok()) << "a transfer after the node rejoined did not commit: " << again << Logs();
  std::vector<BankAccount> now = ReadAccounts(accounts_, absl::Seconds(5));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].balance, kInitialBalance);
  EXPECT_EQ(now[0].last, 3);
}

TEST_P(LogFailureTest, APrimaryWhoseLogFailsLeavesAndItsBackupsFinishTheCommit) {
  TransferWhileTheLogOfOneReplicaFails(0);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, LogFailureTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
