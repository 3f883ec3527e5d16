// CrashClusterTest: the fixture of the crash tests that drive a small cluster from a
// compute-only member (coordinator_crash_test, primary_crash_test): a real ZooKeeper,
// kNodes farm_node processes (r, a data directory and --log_sync=always each, 1 s
// sessions, one worker thread) and, in this process, a compute-only member
// (tools/common/compute_member.h) whose node runs the test's transactions. The
// parameter is the fabric. A failed test's directory (node logs and data) is kept with
// FARM_KEEP_FAILED=1.
#ifndef FARM_TESTS_FAILOVER_CRASH_CLUSTER_H_
#define FARM_TESTS_FAILOVER_CRASH_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "farm/base/address.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "membership/placement.h"
#include "tests/failover/transfer.h"
#include "tests/support/zk_test_server.h"
#include "tools/common/compute_member.h"

namespace farm::testing {

class CrashClusterTest : public ::testing::TestWithParam<std::string> {
 protected:
  static constexpr int kNodes = 3;

  // `node_binary`: farm_node; `name`: the cluster's; `node_flags`: every node's, besides
  // the common ones above.
  CrashClusterTest(std::string node_binary, std::string name, std::vector<std::string> node_flags)
      : node_binary_(std::move(node_binary)), name_(std::move(name)), node_flags_(std::move(node_flags)) {}

  void SetUp() override;
  void TearDown() override;

  // Starts node `id` (again: on its data directory, its log appended to) with the
  // common flags, `min_members` and `flags` (later flags win). Ids above kNodes are
  // members that join later.
  void StartNode(NodeId id, uint32_t min_members, const std::vector<std::string>& flags);
  // Joins this process's compute-only member (member_).
  void JoinMember();
  std::string LogOf(NodeId id) const;
  // The first region of the first node that holds one, once every node sees all of them
  // (kNullRegion, with a failure, if none did within 30 s).
  RegionId SomeRegion();
  // `n` accounts of `balance` created in `region` from the member (fewer, with a
  // failure, if one could not be made there).
  std::vector<FatPtr> CreateAccounts(RegionId region, int n, int64_t balance);
  // The replica set of `region` in the member's configuration.
  absl::StatusOr<membership::ReplicaSet> ReplicasOf(RegionId region);
  // The tail of every node's log, for failure messages.
  std::string Logs() const;
  // Reads `accounts` in one transaction from the member, retried until recovery has
  // released them (at most `timeout`); empty, with a failure, if it never could.
  std::vector<BankAccount> ReadAccounts(const std::vector<FatPtr>& accounts, absl::Duration timeout);
  // Waits until the member's configuration no longer lists `node`.
  bool WaitUntilGone(NodeId node, absl::Duration timeout);
  // Node `node`'s process, reaped here (its pid is then 0): true when a SIGKILL ended it
  // within `timeout`.
  bool ReapKilled(NodeId node, absl::Duration timeout);
  // The same for a process that exits: its exit status (testing::ExitCode: -1 when a
  // signal ended it, -2 when it had not exited within `timeout` and was SIGKILLed).
  int ReapExited(NodeId node, absl::Duration timeout);

  const std::string node_binary_;
  const std::string name_;
  const std::vector<std::string> node_flags_;
  std::string dir_;
  std::unique_ptr<ZkTestServer> zk_;
  std::vector<pid_t> pids_;  // node i at i - 1; 0 once reaped or never started
  std::unique_ptr<tools::ComputeMember> member_;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_FAILOVER_CRASH_CLUSTER_H_
