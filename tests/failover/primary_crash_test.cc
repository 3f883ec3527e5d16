// A primary killed half-way through a single-machine commit (tx/retained_commits.h). A
// cluster of three farm_node processes (real ZooKeeper, r = 3) holds two accounts in one
// region of node P. A compute-only member transfers between them: the commit is shipped
// to P, a single-machine commit. Every node runs with the seam
// --test_fault=single-machine-crash (farm/node/test_faults.h): P sends the commit
// record only to the LAST backup of the region, B, and SIGKILLs itself once B has
// acknowledged it — so B applied the transfer and the other backup, A, never saw it.
// When P leaves the configuration, A is the region's new primary (the first backup:
// placement.h), and its copy lacks the transfer. Failover must still finish it: A
// gathers the commit records the survivors retain for the region before the region
// serves, so the transfer is there — on both accounts, the bank total unchanged — and
// stays there once A's copy becomes B's too. Without the gather A would serve the
// accounts as they were before the transfer that B applied (and, with the accounts in
// two regions promoted to different survivors, one half of it). Parameter: the fabric.
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "membership/placement.h"
#include "tests/failover/crash_cluster.h"
#include "tests/failover/transfer.h"
#include "tests/support/spawn.h"
#include "tests/support/tx_read_all.h"
#include "tests/support/zk_test_server.h"
#include "tools/common/compute_member.h"

namespace farm {
namespace {

using farm::testing::BankAccount;
using farm::testing::kAmount;
using farm::testing::kInitialBalance;

class PrimaryCrashTest : public testing::CrashClusterTest {
 protected:
  PrimaryCrashTest() : CrashClusterTest(FARM_NODE_BINARY, "pcrash", {"--replication=3", "--test_fault=single-machine-crash"}) {}

  std::vector<FatPtr> accounts_;
};

TEST_P(PrimaryCrashTest, ACommitOneSurvivorAppliedIsAppliedByTheNewPrimary) {
  const RegionId region = SomeRegion();
  ASSERT_NE(region, kNullRegion);
  accounts_ = CreateAccounts(region, 2, kInitialBalance);
  ASSERT_EQ(accounts_.size(), 2u) << "the accounts must share a region";
  absl::StatusOr<membership::ReplicaSet> replicas = ReplicasOf(region);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  ASSERT_EQ(replicas->backups().size(), 2u) << replicas->ToString();
  const NodeId primary = replicas->primary();
  const NodeId successor = replicas->backups()[0];  // the new primary once P is gone
  const NodeId witness = replicas->backups()[1];    // the one backup that gets the record
  std::printf("region %u: %s; node %u applies the transfer, node %u becomes primary without it\n", region,
              replicas->ToString().c_str(), witness, successor);

  // Shipped to P, which dies once `witness` acknowledged the record (the seam).
  absl::Status transfer = testing::Transfer(member_->node(), accounts_[0], accounts_[1], kAmount, /*seq=*/1);
  EXPECT_FALSE(transfer.ok()) << "the primary was to die before it answered";
  ASSERT_TRUE(ReapKilled(primary, absl::Seconds(10))) << "node " << primary << " did not die at the seam" << Logs();
  ASSERT_TRUE(WaitUntilGone(primary, absl::Seconds(15))) << "the configuration still lists node " << primary << Logs();

  // The witness applied it: the transfer is there, whole, at the new primary.
  std::vector<BankAccount> now = ReadAccounts(accounts_, absl::Seconds(20));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].balance + now[1].balance, 2 * kInitialBalance) << "money created or destroyed";
  EXPECT_EQ(now[0].last, 1) << "the transfer that node " << witness << " applied is missing" << Logs();
  EXPECT_EQ(now[1].last, 1) << "the transfer that node " << witness << " applied is missing" << Logs();
  EXPECT_EQ(now[0].balance, kInitialBalance - kAmount);
  EXPECT_EQ(now[1].balance, kInitialBalance + kAmount);

  // The region serves writes again (one object: the seam acts on two or more), and the
  // transfer stays.
  absl::StatusOr<std::vector<std::string>> before = testing::ReadAllInOneTx(member_->node(), {accounts_[0]});
  ASSERT_TRUE(before.ok()) << before.status();
  BankAccount touched = testing::DecodeAccount((*before)[0]);
  touched.last = 2;
  absl::Status wrote;
  const absl::Time write_deadline = absl::Now() + absl::Seconds(20);
  do {
    wrote = testing::WriteAllInOneTx(member_->node(), {accounts_[0]}, testing::EncodeAccount(touched));
    if (wrote.ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < write_deadline);
  ASSERT_TRUE(wrote.ok()) << "a write after failover did not commit: " << wrote << Logs();
  now = ReadAccounts(accounts_, absl::Seconds(5));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].balance, kInitialBalance - kAmount);
  EXPECT_EQ(now[0].last, 2);
  EXPECT_EQ(now[1].balance, kInitialBalance + kAmount);
  EXPECT_EQ(now[1].last, 1);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, PrimaryCrashTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
