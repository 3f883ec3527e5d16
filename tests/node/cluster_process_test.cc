// A cluster of real farm_node processes against a real ZooKeeper server: three nodes
// join and agree; a SIGKILLed node is removed within session timeout + 2 s; restarted on
// its old data directory it refuses to join (its copies are stale), restarted empty it
// rejoins in a later epoch; every node computes the same placement.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "absl/strings/str_cat.h"
#include "farm/node/admin_protocol.h"
#include "gtest/gtest.h"
#include "membership/zk_client.h"
#include "membership/zk_membership.h"
#include "tests/support/spawn.h"
#include "tests/support/zk_test_server.h"

namespace farm::node {
namespace {

using farm::testing::FileTail;
using farm::testing::SpawnWithLog;
using farm::testing::ZkTestServer;

constexpr int kSessionTimeoutMs = 1000;

class ClusterProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-cluster-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/secret") << "cluster-process-test-secret-0123456789";
    absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = std::move(*zk);
    membership::ZkClient::Options o;
    o.hosts = zk_->address();
    absl::StatusOr<std::unique_ptr<membership::ZkClient>> client =
        membership::ZkClient::Connect(o, nullptr);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }

  void TearDown() override {
    for (auto& [id, pid] : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  void StartNode(NodeId id) {
    const std::string log = absl::StrCat(dir_, "/node-", id, ".log");
    absl::StatusOr<pid_t> pid = SpawnWithLog(
        {FARM_NODE_BINARY, absl::StrCat("--node_id=", id), "--cluster=test",
         "--zookeeper=" + zk_->address(), "--secret_file=" + dir_ + "/secret",
         absl::StrCat("--data_dir=", dir_, "/node-", id), "--region_mb=32", "--threads=1",
         absl::StrCat("--session_timeout_ms=", kSessionTimeoutMs)},
        log);
    ASSERT_TRUE(pid.ok()) << pid.status();
    pids_[id] = *pid;
  }

  // The configuration in ZooKeeper, or nullopt.
  std::optional<membership::Configuration> Config() {
    absl::StatusOr<membership::ZkNodeData> data =
        client_->Get(membership::ZkMembership::Root("test") + "/config", false);
    if (!data.ok()) return std::nullopt;
    absl::StatusOr<membership::Configuration> c = membership::DecodeConfiguration(data->data);
    return c.ok() ? std::optional(*c) : std::nullopt;
  }

  static std::vector<NodeId> Ids(const membership::Configuration& c) {
    std::vector<NodeId> ids;
    for (const auto& m : c.members) ids.push_back(m.id);
    return ids;
  }

  // Waits until the configuration has exactly `ids` and every one of them reports, over
  // its admin port, that it serves in that epoch. Returns the configuration.
  std::optional<membership::Configuration> WaitForCluster(const std::vector<NodeId>& ids,
                                                          absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::optional<membership::Configuration> c = Config();
      if (c && Ids(*c) == ids && AllServe(*c)) return c;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return std::nullopt;
  }

  bool AllServe(const membership::Configuration& c) {
    for (const auto& m : c.members) {
      absl::StatusOr<NodeStats> s = Stats(m);
      if (!s.ok() || !s->serving() || s->epoch() != c.epoch) return false;
    }
    return true;
  }

  absl::StatusOr<NodeStats> Stats(const membership::Member& m) {
    AdminRequest req;
    req.set_format(kAdminFormat);
    req.set_command(AdminRequest::STATS);
    absl::StatusOr<AdminResponse> r = AdminCall(m.admin_address, req, absl::Seconds(1));
    if (!r.ok()) return r.status();
    return r->stats();
  }

  std::string Logs() {
    std::string out;
    for (const auto& [id, pid] : pids_) {
      absl::StrAppend(&out, "--- node ", id, "\n", FileTail(absl::StrCat(dir_, "/node-", id, ".log"), 800));
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<ZkTestServer> zk_;
  std::unique_ptr<membership::ZkClient> client_;
  std::map<NodeId, pid_t> pids_;
};

TEST_F(ClusterProcessTest, JoinFailDetectRejoinAndIdenticalPlacement) {
  for (NodeId id : {1u, 2u, 3u}) StartNode(id);
  std::optional<membership::Configuration> three = WaitForCluster({1, 2, 3}, absl::Seconds(30));
  ASSERT_TRUE(three.has_value()) << Logs();

  // Every node computes the same placement from the same configuration.
  std::optional<uint64_t> digest;
  for (const auto& m : three->members) {
    absl::StatusOr<NodeStats> s = Stats(m);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_NE(s->placement_digest(), 0u);
    if (digest) {
      EXPECT_EQ(s->placement_digest(), *digest) << "node " << m.id;
    }
    digest = s->placement_digest();
  }
  // Links follow each configuration asynchronously: every node gets linked to the others.
  const absl::Time link_deadline = absl::Now() + absl::Seconds(15);
  for (const auto& m : three->members) {
    absl::StatusOr<NodeStats> s = Stats(m);
    while (s.ok() && s->connected_peers() < 2 && absl::Now() < link_deadline) {
      absl::SleepFor(absl::Milliseconds(20));
      s = Stats(m);
    }
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->connected_peers(), 2u) << "node " << m.id << " linked to the others";
  }

  // SIGKILL: no goodbye; the session expires and the manager removes the node.
  const absl::Time killed = absl::Now();
  ::kill(pids_[3], SIGKILL);
  ::waitpid(pids_[3], nullptr, 0);
  pids_.erase(3);
  std::optional<membership::Configuration> two;
  while (absl::Now() - killed < absl::Milliseconds(kSessionTimeoutMs) + absl::Seconds(2)) {
    two = Config();
    if (two && Ids(*two) == std::vector<NodeId>{1, 2}) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(two && Ids(*two) == (std::vector<NodeId>{1, 2}))
      << "not removed within session timeout + 2 s\n" << Logs();
  EXPECT_GT(two->epoch, three->epoch);
  std::printf("killed node removed after %s (session timeout %d ms)\n",
              absl::FormatDuration(absl::Now() - killed).c_str(), kSessionTimeoutMs);

  // Restarted on its data directory, it refuses to join: the others ran on without it
  // (failover moved its regions), so its copies are stale.
  {
    StartNode(3);
    int status = 0;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    pid_t done = 0;
    while ((done = ::waitpid(pids_[3], &status, WNOHANG)) == 0 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    ASSERT_EQ(done, pids_[3]) << "node 3 started on its stale data directory\n" << Logs();
    pids_.erase(3);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << status;
    std::ifstream log(absl::StrCat(dir_, "/node-3.log"));
    const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(said.find("was removed from cluster"), std::string::npos) << said;
  }
  // Restarted empty, it rejoins in a later epoch and everyone serves there.
  std::filesystem::remove_all(absl::StrCat(dir_, "/node-3"));
  StartNode(3);
  std::optional<membership::Configuration> again = WaitForCluster({1, 2, 3}, absl::Seconds(30));
  ASSERT_TRUE(again.has_value()) << Logs();
  EXPECT_GT(again->epoch, two->epoch);
  for (const auto& m : again->members) {
    absl::StatusOr<NodeStats> s = Stats(m);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->placement_digest(), *digest) << "same members, same placement";
  }
  // SIGTERM leaves cleanly and exits 0.
  ::kill(pids_[2], SIGTERM);
  int status = 0;
  ::waitpid(pids_[2], &status, 0);
  pids_.erase(2);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(ClusterProcessTest, StartupErrorsAreOneClearLine) {
  const std::string log = dir_ + "/bad.log";
  // A duplicate node id: the second process refuses to start.
  StartNode(1);
  ASSERT_TRUE(WaitForCluster({1}, absl::Seconds(30)).has_value()) << Logs();
  absl::StatusOr<pid_t> dup = SpawnWithLog(
      {FARM_NODE_BINARY, "--node_id=1", "--cluster=test", "--zookeeper=" + zk_->address(),
       "--secret_file=" + dir_ + "/secret", "--data_dir=" + dir_ + "/dup", "--region_mb=32",
       "--session_timeout_ms=1000"},
      log);
  ASSERT_TRUE(dup.ok());
  int status = 0;
  ::waitpid(*dup, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_NE(FileTail(log).find("registered by another live process"), std::string::npos)
      << FileTail(log);
  // An unreachable ZooKeeper: a bounded wait, then the error.
  const absl::Time start = absl::Now();
  absl::StatusOr<pid_t> lost = SpawnWithLog(
      {FARM_NODE_BINARY, "--node_id=5", "--zookeeper=127.0.0.1:1", "--secret_file=" + dir_ + "/secret",
       "--data_dir=" + dir_ + "/lost", "--region_mb=32", "--zk_connect_timeout_ms=1000"},
      log);
  ASSERT_TRUE(lost.ok());
  ::waitpid(*lost, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_NE(FileTail(log).find("no ZooKeeper session with 127.0.0.1:1"), std::string::npos)
      << FileTail(log);
}

}  // namespace
}  // namespace farm::node
