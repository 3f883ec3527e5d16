// The kv store served by separate farm_node processes (--services=kv) against a real
// ZooKeeper: a key set through one node's RESP port is read through another's; every
// node answers for every key, and SCAN and KEYS through one node list the keys of all;
// a node that joins later adopts the same table; malformed
// input and bad AUTH get Redis-style errors and the node keeps serving; after a SIGKILL
// the survivors answer every key quickly, never with a wrong value, and with its value
// once the dead node's shards are promoted (failover); SIGTERM stops a node cleanly.
// The same service with the linear-probing layout (--kv_layout=linear), YCSB joining
// it with --layout=linear, and a node asked for a layout not built refusing to start.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "farm/base/address.h"
#include "farm/base/unique_fd.h"
#include "farm/node/admin_protocol.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/resp_client.h"
#include "tests/support/spawn.h"
#include "tests/support/zk_test_server.h"

namespace farm::kv {
namespace {

using farm::testing::ExitCode;
using farm::testing::FileTail;
using farm::testing::RespClient;
using farm::testing::SpawnWithLog;
using farm::testing::ZkTestServer;

// Parameter: the fabric between the node processes ("shm" or "tcp").
class KvServiceProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-kv-service-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/secret") << "kv-service-process-test-secret-0123";
    std::ofstream(dir_ + "/password") << "sesame\n";
    absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = std::move(*zk);
  }

  void TearDown() override {
    for (auto& [id, pid] : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  std::string LogOf(NodeId id) const { return absl::StrCat(dir_, "/node-", id, ".log"); }

  std::string layout_ = "hopscotch";  // every node's --kv_layout

  void StartNode(NodeId id, bool compute_only = false) {
    std::vector<std::string> argv = {FARM_NODE_BINARY, absl::StrCat("--node_id=", id), "--cluster=kvtest",
                                     "--zookeeper=" + zk_->address(), "--secret_file=" + dir_ + "/secret",
                                     absl::StrCat("--data_dir=", dir_, "/node-", id), "--region_mb=64",
                                     "--threads=2", "--session_timeout_ms=1000", "--services=kv",
                                     "--kv_buckets=2048", "--resp_password_file=" + dir_ + "/password",
                                     "--fabric=" + GetParam(), "--kv_layout=" + layout_};
    // Nodes 1-3 are the cluster's first: their first regions wait for all three (started
    // one by one, a slow start would otherwise place them among the first two only).
    argv.push_back(compute_only || id > 3 ? "--min_members=1" : "--min_members=3");
    if (compute_only) argv.push_back("--compute_only");
    absl::StatusOr<pid_t> pid = SpawnWithLog(argv, LogOf(id));
    ASSERT_TRUE(pid.ok()) << pid.status();
    pids_[id] = *pid;
  }

  // Starts nodes 1 to 3 the slow way: 1 and 2 first, and 3 only once node 1 has logged
  // that it waits for a third member before creating its first region (--min_members):
  // regions placed among 1 and 2 alone would lack a copy on 3, and commits to them fail.
  void StartFirstThreeStaggered() {
    StartNode(1);
    StartNode(2);
    ASSERT_TRUE(WaitForLog(1, "waiting for 3 members that hold data", absl::Seconds(60))) << Logs();
    StartNode(3);
  }

  bool WaitForLog(NodeId id, const std::string& text, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::ifstream log(LogOf(id));
      for (std::string line; std::getline(log, line);) {
        if (line.find(text) != std::string::npos) return true;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  // The node's RESP port, from its log's "kv: RESP on ... port N" line.
  std::optional<uint16_t> WaitForRespPort(NodeId id, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (std::optional<uint16_t> port = testing::LoggedRespPort(LogOf(id))) return port;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return std::nullopt;
  }

  // The node's admin address, from its log's "ready; admin port A" line.
  std::optional<std::string> AdminAddress(NodeId id) {
    return testing::LoggedAdminAddress(LogOf(id));
  }

  // Node `id`'s kv service counters from its admin port (empty when unreachable).
  std::map<std::string, uint64_t> KvCounters(NodeId id) {
    std::map<std::string, uint64_t> counters;
    std::optional<std::string> admin = AdminAddress(id);
    if (!admin.has_value()) return counters;
    node::AdminRequest request;
    request.set_format(node::kAdminFormat);
    request.set_command(node::AdminRequest::STATS);
    absl::StatusOr<node::AdminResponse> stats = node::AdminCall(*admin, request, absl::Seconds(5));
    if (!stats.ok() || stats->stats().services_size() != 1 || stats->stats().services(0).service() != "kv") {
      return counters;
    }
    for (const node::ServiceCounter& c : stats->stats().services(0).counters()) counters[c.name()] = c.value();
    return counters;
  }

  RespClient Authed(NodeId id) {
    std::optional<RespClient> c = RespClient::Connect(ports_.at(id));
    EXPECT_TRUE(c.has_value());
    EXPECT_EQ(c->Call({"AUTH", "sesame"}), "+OK");
    return std::move(*c);
  }

  std::string Logs() {
    std::string out;
    for (const auto& [id, pid] : pids_)
      absl::StrAppend(&out, "--- node ", id, "\n", FileTail(LogOf(id), 1500));
    return out;
  }

  std::string dir_;
  std::unique_ptr<ZkTestServer> zk_;
  std::map<NodeId, pid_t> pids_;
  std::map<NodeId, uint16_t> ports_;
};

TEST_P(KvServiceProcessTest, EveryNodeServesEveryKeyAndSurvivorsAnswerAfterAKill) {
  StartFirstThreeStaggered();
  for (NodeId id = 1; id <= 3; ++id) {
    std::optional<uint16_t> port = WaitForRespPort(id, absl::Seconds(60));
    ASSERT_TRUE(port.has_value()) << "node " << id << " did not serve RESP\n" << Logs();
    ports_[id] = *port;
  }
  // Bad AUTH and malformed input get Redis's errors; the node keeps serving.
  {
    std::optional<RespClient> c = RespClient::Connect(ports_[2]);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->Call({"GET", "x"}), "-NOAUTH Authentication required.");
    EXPECT_EQ(c->Call({"AUTH", "wrong"}).substr(0, 10), "-WRONGPASS");
    std::optional<RespClient> bad = RespClient::Connect(ports_[2]);
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->Raw("*1\r\n$x\r\n").substr(0, 20), "-ERR Protocol error:");
  }
  RespClient one = Authed(1), two = Authed(2), three = Authed(3);
  constexpr int kKeys = 60;
  for (int i = 0; i < kKeys; ++i) {
    RespClient& via = i % 3 == 0 ? one : i % 3 == 1 ? two : three;
    ASSERT_EQ(via.Call({"SET", absl::StrCat("key", i), absl::StrCat("value", i)}), "+OK") << Logs();
  }
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = absl::StrCat("key", i), value = absl::StrCat("value", i);
    EXPECT_EQ(three.Call({"GET", key}), value);
    EXPECT_EQ(one.Call({"GET", key}), value);
  }
  EXPECT_EQ(two.Call({"DBSIZE"}), absl::StrCat(":", kKeys));
  // The admin port reports the service's counters (farm_admin stats).
  std::map<std::string, uint64_t> counters = KvCounters(3);
  ASSERT_FALSE(counters.empty()) << Logs();
  EXPECT_EQ(counters["resp_commands"], uint64_t{1 + kKeys / 3 + kKeys});  // AUTH, its SETs, GETs
  EXPECT_EQ(counters["resp_connections_accepted"], 1u);
  EXPECT_EQ(counters["resp_connections_open"], 1u);
  // The service heard the configuration of the three nodes (ServiceSet → OnConfiguration).
  EXPECT_GE(counters["configuration_epoch"], 1u);
  EXPECT_EQ(counters["configuration_members"], 3u);
  // SCAN's pages through node 1 list every key once (the table's home buckets are on
  // all three nodes); KEYS through node 2 the matching ones.
  {
    std::vector<std::string> scanned;
    std::string cursor = "0";
    do {
      const std::string page = one.Call({"SCAN", cursor, "COUNT", "7"});  // [cursor,[k,...]]
      const size_t comma = page.find(",[");
      ASSERT_NE(comma, std::string::npos) << page;
      cursor = page.substr(1, comma - 1);
      const std::string keys = page.substr(comma + 2, page.size() - comma - 4);
      if (!keys.empty()) {
        for (absl::string_view k : absl::StrSplit(keys, ',')) scanned.emplace_back(k);
      }
    } while (cursor != "0");
    std::sort(scanned.begin(), scanned.end());
    std::vector<std::string> expected;
    for (int i = 0; i < kKeys; ++i) expected.push_back(absl::StrCat("key", i));
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(scanned, expected);
    const std::string tens = two.Call({"KEYS", "key1?"});
    EXPECT_EQ(std::count(tens.begin(), tens.end(), ','), 9) << tens;
  }

  // A 4th node joins after the table exists: it adopts the table's map from the catalog
  // coordinator, so it never answers "absent" for a present key, nor another value; it
  // answers with the value, or a "try again" error while the join hands a region over to
  // it (its old primary sends it the region's copy).
  StartNode(4);
  std::optional<uint16_t> port4 = WaitForRespPort(4, absl::Seconds(60));
  ASSERT_TRUE(port4.has_value()) << "node 4 did not serve RESP\n" << Logs();
  ports_[4] = *port4;
  RespClient four = Authed(4);
  // Every key reads back its value through node 4 once the handovers are done: until
  // then a key may answer "try again" (an error naming its region), never absent, never
  // another value.
  int same_values = 0;
  std::string last_error;
  const absl::Time handed_over = absl::Now() + absl::Seconds(15);
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = absl::StrCat("key", i);
    std::string via4 = four.Call({"GET", key});
    while (via4 != absl::StrCat("value", i) && absl::Now() < handed_over) {
      EXPECT_EQ(via4.substr(0, 5), "-ERR ") << key << ": " << via4;
      EXPECT_NE(via4.find("region"), std::string::npos) << key << ": " << via4;
      last_error = via4;
      absl::SleepFor(absl::Milliseconds(50));
      via4 = four.Call({"GET", key});
    }
    same_values += via4 == absl::StrCat("value", i);
  }
  EXPECT_EQ(same_values, kKeys) << "node 4 did not serve every key within 15 s; the last error: " << last_error
                                << "\n" << Logs();

  // SIGKILL node 2: every key answers from each survivor quickly — its value, or an error
  // while the cluster fails over — and, once node 2's shards are promoted on the others,
  // its value again, through every survivor.
  ::kill(pids_[2], SIGKILL);
  ::waitpid(pids_[2], nullptr, 0);
  pids_.erase(2);
  int values = 0, errors = 0;
  const absl::Time failed_over = absl::Now() + absl::Seconds(20);
  for (RespClient* via : {&one, &three, &four}) {
    for (int i = 0; i < kKeys; ++i) {
      for (;;) {
        const absl::Time start = absl::Now();
        const std::string got = via->Call({"GET", absl::StrCat("key", i)});
        EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "key" << i;
        if (got == absl::StrCat("value", i)) {
          ++values;
          break;
        }
        ASSERT_EQ(got.substr(0, 5), "-ERR ") << "key" << i << ": " << got;
        ++errors;
        if (absl::Now() > failed_over) {
          ADD_FAILURE() << "key" << i << " still fails 20 s after the kill: " << got << "\n" << Logs();
          break;
        }
        absl::SleepFor(absl::Milliseconds(50));
      }
    }
  }
  EXPECT_EQ(values, 3 * kKeys) << "every key reads back through every survivor after failover";
  std::printf("after the kill: %d answers with the value, %d errors on the way\n", values, errors);

  // SIGTERM: node 3 stops its service and leaves cleanly.
  ::kill(pids_[3], SIGTERM);
  int status = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  pid_t done = 0;
  while ((done = ::waitpid(pids_[3], &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(done, pids_[3]) << "node 3 did not exit after SIGTERM\n" << Logs();
  pids_.erase(3);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(one.Call({"PING"}), "+PONG");
  // Node 1 keeps hearing configurations though they are now smaller than the three it
  // waited for at start (--min_members gates only the first region): nodes 1 and 4.
  const absl::Time heard_by = absl::Now() + absl::Seconds(20);
  while (KvCounters(1)["configuration_members"] != 2 && absl::Now() < heard_by) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(KvCounters(1)["configuration_members"], 2u) << Logs();
}

// A compute-only member (farm_node --compute_only) joins a running cluster, serves every
// key over RESP and moves no data: every key keeps answering with its value through
// every node, before and after the member is killed. Then YCSB's cluster backend joins
// the same way and runs a workload in it.
TEST_P(KvServiceProcessTest, ComputeOnlyMembersJoinWithoutMovingDataAndRunApplications) {
  StartFirstThreeStaggered();
  for (NodeId id = 1; id <= 3; ++id) {
    std::optional<uint16_t> port = WaitForRespPort(id, absl::Seconds(60));
    ASSERT_TRUE(port.has_value()) << "node " << id << " did not serve RESP\n" << Logs();
    ports_[id] = *port;
  }
  constexpr int kKeys = 60;
  RespClient one = Authed(1);
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_EQ(one.Call({"SET", absl::StrCat("key", i), absl::StrCat("value", i)}), "+OK");
  }
  StartNode(9, /*compute_only=*/true);
  std::optional<uint16_t> port9 = WaitForRespPort(9, absl::Seconds(60));
  ASSERT_TRUE(port9.has_value()) << "the compute-only member did not serve RESP\n" << Logs();
  ports_[9] = *port9;
  RespClient nine = Authed(9);
  RespClient two = Authed(2);
  for (int i = 0; i < kKeys; ++i) {  // no placement moved: every answer is the value
    EXPECT_EQ(nine.Call({"GET", absl::StrCat("key", i)}), absl::StrCat("value", i));
    EXPECT_EQ(two.Call({"GET", absl::StrCat("key", i)}), absl::StrCat("value", i));
  }
  EXPECT_EQ(nine.Call({"SET", "from-nine", "x"}), "+OK");  // stored on the others
  EXPECT_EQ(two.Call({"GET", "from-nine"}), "x");
  EXPECT_EQ(nine.Call({"DBSIZE"}), absl::StrCat(":", kKeys + 1));

#ifdef FARM_ADMIN_BINARY
  // farm_admin config names it for what it is.
  {
    const std::string out = dir_ + "/admin.out";
    absl::StatusOr<pid_t> admin =
        SpawnWithLog({FARM_ADMIN_BINARY, "--zookeeper=" + zk_->address(), "--cluster=kvtest", "config"}, out);
    ASSERT_TRUE(admin.ok()) << admin.status();
    ASSERT_EQ(ExitCode(*admin, absl::Seconds(30)), 0) << FileTail(out, 2000);
    EXPECT_THAT(FileTail(out, 4000), ::testing::HasSubstr("\n9      compute "));
    EXPECT_THAT(FileTail(out, 4000), ::testing::HasSubstr("\n1      member "));
  }
#endif
  ::kill(pids_[9], SIGKILL);
  ::waitpid(pids_[9], nullptr, 0);
  pids_.erase(9);
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(one.Call({"GET", absl::StrCat("key", i)}), absl::StrCat("value", i));
  EXPECT_EQ(one.Call({"GET", "from-nine"}), "x");

#if !defined(YCSB_BINARY) || !defined(TX_BENCH_BINARY)
  GTEST_SKIP() << "built without tools (FARM_BUILD_TOOLS=OFF): the drivers' part is not run";
#else
  // YCSB's application threads inside the cluster, as a compute-only member.
  const std::string out = dir_ + "/ycsb.out";
  absl::StatusOr<pid_t> ycsb = SpawnWithLog(
      {YCSB_BINARY, "--backend=cluster", "--zookeeper=" + zk_->address(), "--cluster=kvtest",
       "--member_fabric=" + GetParam(),
       "--secret_file=" + dir_ + "/secret", "--workload=b", "--preset=farm", "--records=2000",
       "--operations=20000", "--threads=2", "--warmup_seconds=0"},
      out);
  ASSERT_TRUE(ycsb.ok()) << ycsb.status();
  ASSERT_EQ(ExitCode(*ycsb, absl::Seconds(120)), 0) << FileTail(out, 3000);
  const std::string report = FileTail(out, 6000);
  EXPECT_THAT(report, ::testing::HasSubstr("load: 2000 inserts"));
  EXPECT_THAT(report, ::testing::HasSubstr("20000 ops"));
  EXPECT_THAT(report, ::testing::HasSubstr(", 0 errors"));
  // The loaded records are the cluster's: readable through a storage node's RESP port.
  EXPECT_EQ(one.Call({"DBSIZE"}), absl::StrCat(":", kKeys + 1 + 2000));
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(two.Call({"GET", absl::StrCat("key", i)}), absl::StrCat("value", i));

  // tx_bench's bank coordinated from a compute-only member: accounts on the storage
  // nodes, transfers shipped to one primary and in two phases across two; it fails
  // unless the total balance is unchanged.
  const std::string bank = dir_ + "/tx_bench.out";
  absl::StatusOr<pid_t> tx = SpawnWithLog({TX_BENCH_BINARY, "--zookeeper=" + zk_->address(), "--cluster=kvtest",
                                           "--member_fabric=" + GetParam(),
                                           "--secret_file=" + dir_ + "/secret", "--seconds=0.5",
                                           "--accounts=200", "--redis=false"},
                                          bank);
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_EQ(ExitCode(*tx, absl::Seconds(120)), 0) << FileTail(bank, 3000);
  const std::string bank_report = FileTail(bank, 4000);
  EXPECT_THAT(bank_report, ::testing::HasSubstr("FaRM single cluster"));
  EXPECT_THAT(bank_report, ::testing::HasSubstr("FaRM distributed cluster"));
  EXPECT_THAT(bank_report, ::testing::HasSubstr("lock-free reads cluster"));
#endif
}

TEST_P(KvServiceProcessTest, TheLinearLayoutServesEveryKeyFromEveryNodeAndYcsbJoinsIt) {
  layout_ = "linear";
  StartFirstThreeStaggered();
  for (NodeId id = 1; id <= 3; ++id) {
    std::optional<uint16_t> port = WaitForRespPort(id, absl::Seconds(60));
    ASSERT_TRUE(port.has_value()) << "node " << id << " did not serve RESP\n" << Logs();
    ports_[id] = *port;
  }
  EXPECT_TRUE(WaitForLog(1, "kv: table layout linear", absl::Seconds(5))) << Logs();
  constexpr int kKeys = 60;
  RespClient one = Authed(1), two = Authed(2), three = Authed(3);
  for (int i = 0; i < kKeys; ++i) {
    const std::string value = i % 3 == 0 ? std::string(100, 'a' + i % 26) : absl::StrCat("value", i);
    ASSERT_EQ(one.Call({"SET", absl::StrCat("key", i), value}), "+OK");
  }
  for (int i = 0; i < kKeys; ++i) {
    const std::string value = i % 3 == 0 ? std::string(100, 'a' + i % 26) : absl::StrCat("value", i);
    EXPECT_EQ(two.Call({"GET", absl::StrCat("key", i)}), value);
    EXPECT_EQ(three.Call({"GET", absl::StrCat("key", i)}), value);
  }
  EXPECT_EQ(three.Call({"DEL", "key1", "key2"}), ":2");
  EXPECT_EQ(two.Call({"GET", "key1"}), "(nil)");
  EXPECT_EQ(one.Call({"INCR", "counter"}), ":1");
  EXPECT_EQ(two.Call({"DBSIZE"}), absl::StrCat(":", kKeys - 1));
#ifdef YCSB_BINARY
  const std::string out = dir_ + "/ycsb.out";
  absl::StatusOr<pid_t> ycsb = SpawnWithLog(
      {YCSB_BINARY, "--backend=cluster", "--zookeeper=" + zk_->address(), "--cluster=kvtest",
       "--member_fabric=" + GetParam(), "--secret_file=" + dir_ + "/secret", "--layout=linear", "--workload=a",
       "--preset=farm", "--records=2000", "--operations=20000", "--threads=2", "--warmup_seconds=0"},
      out);
  ASSERT_TRUE(ycsb.ok()) << ycsb.status();
  ASSERT_EQ(ExitCode(*ycsb, absl::Seconds(120)), 0) << FileTail(out, 3000);
  EXPECT_THAT(FileTail(out, 6000), ::testing::HasSubstr(", 0 errors"));
  EXPECT_EQ(one.Call({"DBSIZE"}), absl::StrCat(":", kKeys - 1 + 2000));
#endif
  // A node asked for a layout this build does not have says which it has, and exits.
  layout_ = "robinhood";
  StartNode(5);
  EXPECT_NE(ExitCode(pids_[5], absl::Seconds(30)), 0);
  pids_.erase(5);
  EXPECT_THAT(FileTail(LogOf(5), 3000), ::testing::HasSubstr("built layouts: hopscotch, linear, chained, cuckoo"));
}

INSTANTIATE_TEST_SUITE_P(Fabrics, KvServiceProcessTest, ::testing::Values("shm", "tcp"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace farm::kv
