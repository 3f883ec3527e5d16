#include "tests/failover/crash_cluster.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/support/spawn.h"
#include "tests/support/tx_read_all.h"

namespace farm::testing {

void CrashClusterTest::SetUp() {
  std::string tmpl = absl::StrCat("/tmp/farm-", name_, "-XXXXXX");
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  dir_ = tmpl;
  std::ofstream(dir_ + "/secret") << name_ << "-test-secret-0123456789012345";
  absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
  ASSERT_TRUE(zk.ok()) << zk.status();
  zk_ = std::move(*zk);
  pids_.assign(kNodes, 0);
  for (NodeId id = 1; id <= kNodes; ++id) {
    StartNode(id, kNodes, node_flags_);
    if (HasFatalFailure()) return;
  }
  JoinMember();
}

void CrashClusterTest::StartNode(NodeId id, uint32_t min_members, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {
      node_binary_, absl::StrCat("--node_id=", id), "--cluster=" + name_, "--zookeeper=" + zk_->address(),
      "--secret_file=" + dir_ + "/secret", absl::StrCat("--data_dir=", dir_, "/node-", id), "--region_mb=32",
      "--threads=1", "--session_timeout_ms=1000", "--fabric=" + GetParam(), absl::StrCat("--min_members=", min_members),
      "--log_sync=always"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (pids_.size() < id) pids_.resize(id, 0);  // a member that joins later
  absl::StatusOr<pid_t> pid = SpawnWithLog(argv, LogOf(id));
  ASSERT_TRUE(pid.ok()) << pid.status();
  pids_[id - 1] = *pid;
}

void CrashClusterTest::JoinMember() {
  tools::ComputeMemberOptions o;
  o.zookeeper = zk_->address();
  o.cluster = name_;
  o.secret_file = dir_ + "/secret";
  o.fabric = GetParam();
  o.threads = 1;
  o.join_timeout = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<tools::ComputeMember>> m = tools::ComputeMember::Join(o);
  ASSERT_TRUE(m.ok()) << m.status() << Logs();
  member_ = std::move(*m);
}

void CrashClusterTest::TearDown() {
  member_.reset();
  for (pid_t pid : pids_) {
    if (pid > 0) ::kill(pid, SIGKILL);
  }
  for (pid_t pid : pids_) {
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
  // A sanitizer build's nodes report races and memory errors in their logs.
  for (NodeId id = 1; id <= pids_.size(); ++id) {
    const std::string report = SanitizerReportIn(LogOf(id));
    EXPECT_TRUE(report.empty()) << "node " << id << "'s log has a sanitizer report:\n" << report;
  }
  if (HasFailure() && std::getenv("FARM_KEEP_FAILED") != nullptr) {
    std::printf("data kept in %s\n", dir_.c_str());
    return;
  }
  std::filesystem::remove_all(dir_);
}

RegionId CrashClusterTest::SomeRegion() {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (;;) {
    absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> regions = member_->RegionsByPrimary();
    if (regions.ok()) {
      for (const auto& [primary, ids] : *regions) {
        if (!ids.empty()) return ids.front();
      }
    }
    if (absl::Now() > deadline) {
      ADD_FAILURE() << "no node made a region in 30 s" << Logs();
      return kNullRegion;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

std::vector<FatPtr> CrashClusterTest::CreateAccounts(RegionId region, int n, int64_t balance) {
  BankAccount initial;
  initial.balance = balance;
  std::vector<FatPtr> accounts;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<FatPtr> p = CreateObjectInOneTx(member_->node(), EncodeAccount(initial), Addr(region, 0));
    if (!p.ok() || p->addr.region() != region) {
      ADD_FAILURE() << "account " << i << " not made in region " << region << ": "
                    << (p.ok() ? "it went to region " + std::to_string(p->addr.region()) : p.status().ToString())
                    << Logs();
      break;
    }
    accounts.push_back(*p);
  }
  return accounts;
}

absl::StatusOr<membership::ReplicaSet> CrashClusterTest::ReplicasOf(RegionId region) {
  auto config = member_->node().membership().current();
  if (config == nullptr) return absl::UnavailableError("the member has no configuration");
  absl::StatusOr<membership::Placement> placement = membership::Placement::Create(*config);
  if (!placement.ok()) return placement.status();
  return placement->Lookup(region);
}

std::string CrashClusterTest::LogOf(NodeId id) const { return absl::StrCat(dir_, "/node-", id, ".log"); }

std::string CrashClusterTest::Logs() const {
  std::string out;
  for (NodeId id = 1; id <= pids_.size(); ++id) {
    if (std::filesystem::exists(LogOf(id))) absl::StrAppend(&out, "\n--- node ", id, "\n", FileTail(LogOf(id), 3000));
  }
  return out;
}

std::vector<BankAccount> CrashClusterTest::ReadAccounts(const std::vector<FatPtr>& accounts, absl::Duration timeout) {
  absl::StatusOr<std::vector<std::string>> seen;
  const absl::Time deadline = absl::Now() + timeout;
  do {
    seen = ReadAllInOneTx(member_->node(), accounts);
    if (seen.ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < deadline);
  EXPECT_TRUE(seen.ok()) << "the accounts stayed unreadable for " << timeout << ": " << seen.status() << Logs();
  std::vector<BankAccount> out;
  if (seen.ok()) {
    for (const std::string& s : *seen) out.push_back(DecodeAccount(s));
  }
  return out;
}

bool CrashClusterTest::WaitUntilGone(NodeId node, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    auto config = member_->node().membership().current();
    if (config != nullptr && !config->Contains(node)) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

bool CrashClusterTest::ReapKilled(NodeId node, absl::Duration timeout) {
  pid_t& pid = pids_[node - 1];
  int status = 0;
  const absl::Time deadline = absl::Now() + timeout;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (done != pid) return false;
  pid = 0;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

int CrashClusterTest::ReapExited(NodeId node, absl::Duration timeout) {
  const int code = ExitCode(pids_[node - 1], timeout);
  pids_[node - 1] = 0;
  return code;
}

}  // namespace farm::testing
