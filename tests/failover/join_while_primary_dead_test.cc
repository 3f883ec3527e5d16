// A member that holds none of a region becomes its primary while the member that held
// it is dead, and gets the region from a backup (farm/node/region_rescue.cc):
// - a node joins while the dead primary is still listed (its session has not expired):
//   placement moves the primary to the joiner, the dead one can never hand the region
//   over, and when it leaves the survivors hold backup copies of a region whose primary
//   "held it before" by placement;
// - the dead primary was the configuration manager: nothing is published until its
//   session expires, and the next configuration lists the joiner and lacks the primary
//   at once;
// - the dead primary comes back at once under its id with an empty data directory (a
//   replaced machine): it is the primary again and holds nothing. It registers once its
//   predecessor's znode is gone, so it is listed either in place of it (the manager saw
//   both changes at once: the case the rescue serves) or after a configuration without
//   it (the survivors promoted a backup, which hands the region back); which one is a
//   race the test reports but cannot force from outside the processes.
// Without the holder query, reads got "node J is not the primary of region R" for good
// in every case, the data only in the survivors' copies.
//
// The cluster: three farm_node processes (real ZooKeeper, r = 3, 8 s sessions, so the
// join comes well before the dead primary's session expires) hold two accounts in one
// region of node P. The test picks the id J of the joining node so that J is the
// region's primary once listed (or restarts P itself), SIGKILLs P, starts J at once,
// and reads and writes the accounts from a compute-only member. Parameter: the fabric.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

  // An id above the members' (below the compute-only members', which are above a
  // million) whose node is the primary of `region` once it joins `config`; 0 if none.
  // A joiner is its primary when it lands on the region's ring at or after the region
  // and before every member: the cheap test on the ring picks candidates, the placement
  // itself decides.
  static NodeId JoinerPrimaryOf(RegionId region, const membership::Configuration& config) {
    const uint32_t rings = config.virtual_rings;
    absl::StatusOr<membership::RingPosition> at = membership::SplitRegion(region, rings);
    if (!at.ok()) return 0;
    const uint32_t positions = membership::PositionsPerRing(rings);
    // How far after the region a node sits on its ring, clockwise.
    auto after = [&](NodeId node) {
      return (membership::NodePosition(node, at->ring, rings) + positions - at->position) % positions;
    };
    uint32_t nearest = positions;
    for (const membership::Member& m : config.members) {
      if (!m.compute_only) nearest = std::min(nearest, after(m.id));
    }
    for (NodeId id = kNodes + 1; id < 1'000'000; ++id) {
      if (after(id) > nearest) continue;
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

  // A region whose primary is (or is not) the configuration manager. This process's
  // member may have won the election (it races the node processes to register): it
  // then leaves and joins again, behind them.
  RegionId RegionOf(bool manager) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      auto config = member_->node().membership().current();
      if (manager && config != nullptr && config->manager > kNodes) {
        member_.reset();
        JoinMember();
        if (HasFatalFailure()) return kNullRegion;
        continue;
      }
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

  enum class Case { kJoinerListedWithTheDead, kJoinerListedAsTheDeadManagerLeaves, kEmptyRestartUnderItsId };
  void Run(Case c);

  // Waits until the member's configuration lists `node` as another process than
  // `incarnation`; the configuration then. left_between_: some configuration meanwhile
  // did not list `node` at all.
  std::shared_ptr<const membership::Configuration> WaitUntilListed(NodeId node, uint64_t incarnation,
                                                                   absl::Duration timeout) {
    left_between_ = false;
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      auto config = member_->node().membership().current();
      const membership::Member* m = config != nullptr ? config->Find(node) : nullptr;
      if (m != nullptr && m->incarnation != incarnation) return config;
      if (config != nullptr && m == nullptr) left_between_ = true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return nullptr;
  }
  bool left_between_ = false;
};

void JoinWhilePrimaryDeadTest::Run(Case c) {
  const bool kill_manager = c == Case::kJoinerListedAsTheDeadManagerLeaves;
  const RegionId region = RegionOf(kill_manager);
  ASSERT_NE(region, kNullRegion);
  const std::vector<FatPtr> accounts = CreateAccounts(region, 2, kInitialBalance);
  ASSERT_EQ(accounts.size(), 2u);
  absl::StatusOr<membership::ReplicaSet> replicas = ReplicasOf(region);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  const NodeId primary = replicas->primary();
  auto config = member_->node().membership().current();
  ASSERT_NE(config, nullptr);
  const bool restart = c == Case::kEmptyRestartUnderItsId;
  const NodeId joiner = restart ? primary : JoinerPrimaryOf(region, *config);
  ASSERT_NE(joiner, 0u) << "no joining id would be the primary of region " << region;
  ASSERT_NE(config->Find(primary), nullptr);
  const uint64_t incarnation = config->Find(primary)->incarnation;
  std::printf("region %u: %s; node %u dies, node %u %s as its primary\n", region, replicas->ToString().c_str(),
              primary, joiner, restart ? "comes back empty" : "joins");

  ASSERT_EQ(::kill(pids_[primary - 1], SIGKILL), 0);
  ASSERT_TRUE(ReapKilled(primary, absl::Seconds(10)));
  if (restart) {
    std::error_code error;
    std::filesystem::remove_all(absl::StrCat(dir_, "/node-", primary), error);
    ASSERT_FALSE(error) << error.message();
  }
  StartNode(joiner, kNodes, node_flags_);
  std::shared_ptr<const membership::Configuration> listed = WaitUntilListed(joiner, incarnation, absl::Seconds(30));
  ASSERT_NE(listed, nullptr) << "node " << joiner << " was never listed" << Logs();
  if (restart) {
    std::printf("node %u came back %s\n", primary,
                left_between_ ? "after a configuration without it" : "listed in place of its predecessor");
  } else {
    // The case under test: listed with the dead primary, or (no manager meanwhile) in
    // the configuration that drops it.
    ASSERT_EQ(listed->Contains(primary), !kill_manager)
        << "node " << joiner << " was first listed in " << listed->Summary() << ": not the case under test";
    ASSERT_TRUE(WaitUntilGone(primary, absl::Seconds(30))) << Logs();
  }

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

TEST_P(JoinWhilePrimaryDeadTest, TheJoinerGetsTheRegionOfTheDeadPrimaryFromASurvivor) {
  Run(Case::kJoinerListedWithTheDead);
}

// The dead primary was the configuration manager: no configuration is published until its
// session expires, and the next one has the joiner and lacks the primary at once.
TEST_P(JoinWhilePrimaryDeadTest, TheJoinerListedAsTheDeadManagerLeavesGetsItsRegionFromASurvivor) {
  Run(Case::kJoinerListedAsTheDeadManagerLeaves);
}

// The dead primary's id comes back at once on an empty data directory: it is the
// region's primary again and holds none of it.
TEST_P(JoinWhilePrimaryDeadTest, APrimaryBackEmptyUnderItsIdGetsItsRegionFromASurvivor) {
  Run(Case::kEmptyRestartUnderItsId);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, JoinWhilePrimaryDeadTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
