// KNOWN DEFECT, not fixed yet (label known_defect: left out of the default run; run it
// with `ctest -L known_defect`). Both tests fail today: the region is served by nobody.
//
// A member that joins while a region's primary is dead becomes the region's primary, and
// no one gives it the region:
// - The dead primary still listed (its session has not expired): placement moves the
//   primary to the joiner, but the dead one can never hand the region over. When it
//   leaves, the survivors hold backup copies; the joiner, by placement, "held the region
//   before" (it was listed as its primary), so none of them promotes a copy.
// - The dead primary was the configuration manager: nothing is published until its
//   session expires, and the next configuration lists the joiner and lacks the primary at
//   once. The survivors are backups in both, and the primary is the joiner, so again none
//   promotes.
// Either way reads get "node J is not the primary of region R" for good; the data is
// safe in the survivors' copies. The same happens to a region whose promotion at a
// survivor is still gathering commit records when a configuration with a joiner arrives
// (PromotePending then skips it), and to a node restarted empty under its old id before
// its old session expired (listed in place of its predecessor).
// A fix cannot tell from placement alone which member really holds a region (a handover
// that never happened looks like one that did). It needs a fact: for instance the
// joiner, primary of a region it does not hold, asks the region's backups for the copy
// (a promotion at a backup, then a handover), or the backups learn who last sent them
// the region and act when that member left.
//
// The cluster: three farm_node processes (real ZooKeeper, r = 3, 8 s sessions, so the
// join comes well before the dead primary's session expires) hold two accounts in one
// region of node P. The test picks the id J of the joining node so that J is the
// region's primary once listed, SIGKILLs P, starts J at once, and reads and writes the
// accounts from a compute-only member. Parameter: the fabric.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "membership/configuration.h"
#include "membership/placement.h"
#include "tests/failover/crash_cluster.h"
#include "tests/failover/transfer.h"
#include "tests/support/tx_read_all.h"

namespace farm {
namespace {

using farm::testing::BankAccount;
using farm::testing::kInitialBalance;

class JoinWhilePrimaryDeadTest : public testing::CrashClusterTest {
 protected:
  JoinWhilePrimaryDeadTest()
      : CrashClusterTest(FARM_NODE_BINARY, "joindead", {"--replication=3", "--session_timeout_ms=8000"}) {}

  // An id above the members' whose node is the primary of `region` once it joins
  // `config` (0 if none up to 200).
  static NodeId JoinerPrimaryOf(RegionId region, const membership::Configuration& config) {
    for (NodeId id = kNodes + 1; id <= 200; ++id) {
      membership::Configuration joined = config;
      membership::Member m;
      m.id = id;
      joined.members.push_back(m);
      std::sort(joined.members.begin(), joined.members.end(),
                [](const membership::Member& a, const membership::Member& b) { return a.id < b.id; });
      absl::StatusOr<membership::Placement> placement = membership::Placement::Create(joined);
      if (!placement.ok()) continue;
      absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(region);
      if (rs.ok() && rs->primary() == id) return id;
    }
    return 0;
  }

  // A region whose primary is (or is not) the configuration manager.
  RegionId RegionOf(bool manager) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      auto config = member_->node().membership().current();
      auto regions = member_->RegionsByPrimary();
      if (config != nullptr && regions.ok()) {
        for (const auto& [primary, ids] : *regions) {
          if (!ids.empty() && (primary == config->manager) == manager) return ids.front();
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "no region whose primary is " << (manager ? "" : "not ") << "the manager" << Logs();
    return kNullRegion;
  }

  void Run(bool kill_manager);

  // Waits until the member's configuration lists `node`; the configuration then.
  std::shared_ptr<const membership::Configuration> WaitUntilListed(NodeId node, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      auto config = member_->node().membership().current();
      if (config != nullptr && config->Contains(node)) return config;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return nullptr;
  }
};

void JoinWhilePrimaryDeadTest::Run(bool kill_manager) {
  const RegionId region = RegionOf(kill_manager);
  ASSERT_NE(region, kNullRegion);
  const std::vector<FatPtr> accounts = CreateAccounts(region, 2, kInitialBalance);
  ASSERT_EQ(accounts.size(), 2u);
  absl::StatusOr<membership::ReplicaSet> replicas = ReplicasOf(region);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  const NodeId primary = replicas->primary();
  auto config = member_->node().membership().current();
  ASSERT_NE(config, nullptr);
  const NodeId joiner = JoinerPrimaryOf(region, *config);
  ASSERT_NE(joiner, 0u) << "no joining id would be the primary of region " << region;
  std::printf("region %u: %s; node %u dies, node %u joins as its primary\n", region, replicas->ToString().c_str(),
              primary, joiner);

  ASSERT_EQ(::kill(pids_[primary - 1], SIGKILL), 0);
  ASSERT_TRUE(ReapKilled(primary, absl::Seconds(10)));
  StartNode(joiner, kNodes, node_flags_);
  std::shared_ptr<const membership::Configuration> listed = WaitUntilListed(joiner, absl::Seconds(30));
  ASSERT_NE(listed, nullptr) << "node " << joiner << " was never listed" << Logs();
  // The case under test: listed with the dead primary, or (no manager meanwhile) in the
  // configuration that drops it.
  ASSERT_EQ(listed->Contains(primary), !kill_manager)
      << "node " << joiner << " was first listed in " << listed->Summary() << ": not the case under test";
  ASSERT_TRUE(WaitUntilGone(primary, absl::Seconds(30))) << Logs();

  std::vector<BankAccount> now = ReadAccounts(accounts, absl::Seconds(30));
  ASSERT_EQ(now.size(), 2u) << "region " << region << " is served by nobody";
  EXPECT_EQ(now[0].balance, kInitialBalance);
  EXPECT_EQ(now[1].balance, kInitialBalance);
  absl::StatusOr<membership::ReplicaSet> after = ReplicasOf(region);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->primary(), joiner) << after->ToString();

  // It serves writes too, at the joiner.
  absl::Status transfer;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  do {
    transfer = testing::Transfer(member_->node(), accounts[0], accounts[1], testing::kAmount, /*seq=*/1);
    if (transfer.ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < deadline);
  ASSERT_TRUE(transfer.ok()) << transfer << Logs();
  now = ReadAccounts(accounts, absl::Seconds(5));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].balance, kInitialBalance - testing::kAmount);
  EXPECT_EQ(now[1].balance, kInitialBalance + testing::kAmount);
}

TEST_P(JoinWhilePrimaryDeadTest, TheJoinerGetsTheRegionOfTheDeadPrimaryFromASurvivor) { Run(false); }

// The dead primary was the configuration manager: no configuration is published until its
// session expires, and the next one has the joiner and lacks the primary at once.
TEST_P(JoinWhilePrimaryDeadTest, TheJoinerListedAsTheDeadManagerLeavesGetsItsRegionFromASurvivor) { Run(true); }

INSTANTIATE_TEST_SUITE_P(Fabrics, JoinWhilePrimaryDeadTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
