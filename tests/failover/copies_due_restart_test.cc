// A cluster stopped while a promotion's copies were still due, and started again: the new
// primary must send them after the restart (farm/node failover, kRegionCopiesDue). Three
// farm_node processes (real ZooKeeper, r = 3) hold two accounts in one region R of node
// P; its backups are A (R's next primary) and B. Every node runs with two seams
// (farm/node/test_faults.h): single-machine-crash-first — P sends a transfer's commit
// record only to A and dies once A acknowledged it, so B's copy lacks the transfer — and
// hold-region-copies — re-replication sends no copy. A promotes R and owes B a copy of
// it, which the seam holds back. Then A and B are SIGKILLed together (a power cut) and
// started again on their data directories without the seams, A first: A must take R
// back frozen, send B the copy it still owes once B is back, and only then serve R.
// Finally A is killed: B, alone, promotes its copy of R — which has the transfer only if
// A's copy reached it after the restart. Without the durable list of due copies, B would serve the accounts as they
// were before the transfer: a commit that readers saw (at A) undone.
// Parameter: the fabric.
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
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

class CopiesDueRestartTest : public testing::CrashClusterTest {
 protected:
  CopiesDueRestartTest()
      : CrashClusterTest(FARM_NODE_BINARY, "cdue",
                         {"--replication=3", "--test_fault=single-machine-crash-first,hold-region-copies"}) {}

  // Whether node `id`'s log says `what` after its first `from` bytes within `timeout`.
  bool WaitForLog(NodeId id, const std::string& what, absl::Duration timeout, uint64_t from = 0) {
    const absl::Time deadline = absl::Now() + timeout;
    do {
      std::ifstream in(LogOf(id));
      in.seekg(static_cast<std::streamoff>(from));
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (absl::StrContains(text, what)) return true;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < deadline);
    return false;
  }
  uint64_t LogBytes(NodeId id) const { return std::filesystem::file_size(LogOf(id)); }

  // SIGKILLs node `id` and reaps it.
  void Kill(NodeId id) {
    ASSERT_GT(pids_[id - 1], 0);
    ::kill(pids_[id - 1], SIGKILL);
    ASSERT_TRUE(ReapKilled(id, absl::Seconds(10))) << "node " << id << " did not die";
  }
};

TEST_P(CopiesDueRestartTest, ARestartSendsTheCopiesAPromotionStillOwedBeforeTheRegionServes) {
  const RegionId region = SomeRegion();
  ASSERT_NE(region, kNullRegion);
  const std::vector<FatPtr> accounts = CreateAccounts(region, 2, kInitialBalance);
  ASSERT_EQ(accounts.size(), 2u) << "the accounts must share a region";
  absl::StatusOr<membership::ReplicaSet> replicas = ReplicasOf(region);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  ASSERT_EQ(replicas->backups().size(), 2u) << replicas->ToString();
  const NodeId p = replicas->primary();
  const NodeId a = replicas->backups()[0];  // the only one to get the transfer; R's next primary
  const NodeId b = replicas->backups()[1];  // owed a copy of R by a
  std::printf("region %u: %s; node %u gets the transfer and owes node %u a copy\n", region,
              replicas->ToString().c_str(), a, b);

  // Shipped to P, which dies once A acknowledged the record (the seam).
  absl::Status transfer = testing::Transfer(member_->node(), accounts[0], accounts[1], kAmount, /*seq=*/1);
  EXPECT_FALSE(transfer.ok()) << "the primary was to die before it answered";
  ASSERT_TRUE(ReapKilled(p, absl::Seconds(10))) << "node " << p << " did not die at the seam" << Logs();
  ASSERT_TRUE(WaitUntilGone(p, absl::Seconds(15))) << "the configuration still lists node " << p << Logs();
  ASSERT_TRUE(WaitForLog(a, absl::StrCat("region ", region, " promoted"), absl::Seconds(20)))
      << "node " << a << " did not promote region " << region << Logs();

  // The power cut, with the copy to B still due (held back by the seam). The member
  // goes first: nothing is left to write the survivors' removal markers (a cold start).
  member_.reset();
  Kill(a);
  Kill(b);
  ASSERT_FALSE(HasFatalFailure());
  const uint64_t a_before = LogBytes(a);
  const uint64_t b_before = LogBytes(b);
  // A first, alone in a configuration for a while: B is owed its copy all the same (a
  // member not back yet after a restart has not left).
  StartNode(a, 2, {"--replication=3"});
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForLog(a, "waiting for 2 members that hold data", absl::Seconds(30), a_before)) << Logs();
  StartNode(b, 2, {"--replication=3"});
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(WaitForLog(a, absl::StrCat("region ", region, ": copies due to node(s) ", b, " since before the restart"),
                         absl::Seconds(30), a_before))
      << Logs();
  EXPECT_TRUE(WaitForLog(a, absl::StrCat("region ", region, ": every backup holds a copy again"), absl::Seconds(30),
                         a_before))
      << "node " << a << " did not send the copy it owed after the restart" << Logs();
  // Both whole again (min_members), so that B runs failover when A goes.
  for (NodeId n : {a, b}) {
    EXPECT_TRUE(WaitForLog(n, "linked to every member", absl::Seconds(30), n == a ? a_before : b_before))
        << "node " << n << " did not link after the restart" << Logs();
  }
  JoinMember();
  ASSERT_FALSE(HasFatalFailure());
  std::vector<BankAccount> now = ReadAccounts(accounts, absl::Seconds(20));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].balance, kInitialBalance - kAmount) << Logs();
  EXPECT_EQ(now[1].balance, kInitialBalance + kAmount) << Logs();

  // A goes for good: B promotes its copy of R, which must be A's.
  Kill(a);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitUntilGone(a, absl::Seconds(15))) << "the configuration still lists node " << a << Logs();
  now = ReadAccounts(accounts, absl::Seconds(30));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].balance + now[1].balance, 2 * kInitialBalance) << "money created or destroyed" << Logs();
  EXPECT_EQ(now[0].last, 1) << "node " << b << "'s copy lacks the transfer" << Logs();
  EXPECT_EQ(now[1].last, 1) << "node " << b << "'s copy lacks the transfer" << Logs();
}

INSTANTIATE_TEST_SUITE_P(Fabrics, CopiesDueRestartTest, ::testing::Values("tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
