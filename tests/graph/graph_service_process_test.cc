// The graph store served by separate farm_node processes (--services=graph) against a
// real ZooKeeper: nodes and links written through one node's graph RESP port are read
// through every other's (ids, counts, ranges, hidden links, id resets, binary data); a
// node that joins later serves the same graph and its writes are seen by the others;
// malformed input gets Redis-style errors and the node keeps serving; a node hosting
// both services (--services=kv,graph) serves both on its RESP port (and the graph on a
// port of its own with --graph_listen); SIGTERM stops a node cleanly (exit 0).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "farm/base/address.h"
#include "farm/node/admin_protocol.h"
#include "gtest/gtest.h"
#include "tests/support/resp_client.h"
#include "tests/support/spawn.h"
#include "tests/support/zk_test_server.h"

namespace farm::graph {
namespace {

using farm::testing::ExitCode;
using farm::testing::FileTail;
using farm::testing::RespClient;
using farm::testing::SpawnWithLog;
using farm::testing::ZkTestServer;

constexpr char kNodeType[] = "2048";
constexpr char kLinkType[] = "123456789";

// RespClient's rendering of a node reply (NODE.GET): "[:id,:type,:version,:time,data]".
std::string NodeReply(int64_t id, const std::string& type, int64_t version, int64_t time, const std::string& data) {
  return absl::StrCat("[:", id, ",:", type, ",:", version, ",:", time, ",", data, "]");
}

// RespClient's rendering of one link: "[:id1,:type,:id2,:visibility,:version,:time,data]".
std::string LinkReply(int64_t id1, const std::string& type, int64_t id2, int visibility, int64_t version,
                      int64_t time, const std::string& data) {
  return absl::StrCat("[:", id1, ",:", type, ",:", id2, ",:", visibility, ",:", version, ",:", time, ",", data,
                      "]");
}

std::string Array(const std::vector<std::string>& elements) {
  return absl::StrCat("[", absl::StrJoin(elements, ","), "]");
}

// The id in an integer reply (":17"), or -1.
int64_t IdOf(const std::string& reply) {
  int64_t id = -1;
  if (reply.size() < 2 || reply[0] != ':' || !absl::SimpleAtoi(reply.substr(1), &id)) return -1;
  return id;
}

// Parameter: the fabric between the node processes ("shm" or "tcp").
class GraphServiceProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-graph-service-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/secret") << "graph-service-process-test-secret-0123";
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

  // Starts node `id` hosting `services`; `extra` flags are appended (later flags win).
  void StartNode(NodeId id, const std::string& services, int min_members,
                 const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {FARM_NODE_BINARY, absl::StrCat("--node_id=", id), "--cluster=graphtest",
                                     "--zookeeper=" + zk_->address(), "--secret_file=" + dir_ + "/secret",
                                     absl::StrCat("--data_dir=", dir_, "/node-", id), "--region_mb=64",
                                     "--threads=2", "--session_timeout_ms=1000", "--services=" + services,
                                     "--graph_index_buckets=2048", "--kv_buckets=2048", "--fabric=" + GetParam(),
                                     absl::StrCat("--min_members=", min_members)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    absl::StatusOr<pid_t> pid = SpawnWithLog(argv, LogOf(id));
    ASSERT_TRUE(pid.ok()) << pid.status();
    pids_[id] = *pid;
  }

  // Nodes 1 to 3, the cluster's first: 3 only once node 1 waits for a third member, so
  // the first regions are placed on all three (--min_members=3; see the kv process test).
  void StartFirstThreeStaggered() {
    StartNode(1, "graph", 3);
    StartNode(2, "graph", 3);
    ASSERT_TRUE(WaitForLog(1, "waiting for 3 members that hold data", absl::Seconds(60))) << Logs();
    StartNode(3, "graph", 3);
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

  // The port in the node's "<service>: RESP on ... port N" log line (service "graph" or
  // "kv").
  std::optional<uint16_t> WaitForPort(NodeId id, const std::string& service, absl::Duration timeout) {
    const std::string text = service + ": RESP on ";
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::ifstream log(LogOf(id));
      for (std::string line; std::getline(log, line);) {
        if (line.find(text) == std::string::npos) continue;
        uint32_t port = 0;
        if (absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &port)) return static_cast<uint16_t>(port);
      }
      if (pids_.count(id) != 0 && ::waitpid(pids_[id], nullptr, WNOHANG) == pids_[id]) {
        pids_.erase(id);  // exited: its log says why
        return std::nullopt;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return std::nullopt;
  }

  void WaitForGraphPort(NodeId id) {
    std::optional<uint16_t> port = WaitForPort(id, "graph", absl::Seconds(60));
    ASSERT_TRUE(port.has_value()) << "node " << id << " did not serve the graph\n" << Logs();
    ports_[id] = *port;
  }

  RespClient Connect(uint16_t port) {
    std::optional<RespClient> c = RespClient::Connect(port);
    EXPECT_TRUE(c.has_value()) << "port " << port;
    return std::move(*c);
  }

  // Node `id`'s counters of `service` from its admin port (empty when unreachable).
  std::map<std::string, uint64_t> Counters(NodeId id, const std::string& service) {
    std::map<std::string, uint64_t> counters;
    std::optional<std::string> admin = testing::LoggedAdminAddress(LogOf(id));
    if (!admin.has_value()) return counters;
    node::AdminRequest request;
    request.set_format(node::kAdminFormat);
    request.set_command(node::AdminRequest::STATS);
    absl::StatusOr<node::AdminResponse> stats = node::AdminCall(*admin, request, absl::Seconds(5));
    if (!stats.ok()) return counters;
    for (const node::ServiceStats& s : stats->stats().services()) {
      if (s.service() != service) continue;
      for (const node::ServiceCounter& c : s.counters()) counters[c.name()] = c.value();
    }
    return counters;
  }

  // Calls `args` until the reply is `want`, while it is an error (a join hands regions
  // over: "-ERR ... region ..." or "-TRYAGAIN ..."), for at most `timeout`; the last reply.
  std::string CallUntil(RespClient& c, const std::vector<std::string>& args, const std::string& want,
                        absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    std::string got = c.Call(args);
    while (got != want && !got.empty() && got[0] == '-' && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(50));
      got = c.Call(args);
    }
    return got;
  }

  // What follows `text` on the first line of node `id`'s log that holds it ("" if none).
  std::string LoggedAfter(NodeId id, const std::string& text) {
    std::ifstream log(LogOf(id));
    for (std::string line; std::getline(log, line);) {
      if (const size_t at = line.find(text); at != std::string::npos) return line.substr(at + text.size());
    }
    return "";
  }

  // SIGTERMs node `id` and expects a clean exit (status 0) within 20 s.
  void StopCleanly(NodeId id) {
    ASSERT_EQ(::kill(pids_.at(id), SIGTERM), 0);
    const int code = ExitCode(pids_[id], absl::Seconds(20));
    pids_.erase(id);
    EXPECT_EQ(code, 0) << "node " << id << " after SIGTERM (-2: did not exit)\n" << FileTail(LogOf(id), 2000);
  }

  std::string Logs() {
    std::string out;
    for (const auto& [id, pid] : pids_) absl::StrAppend(&out, "--- node ", id, "\n", FileTail(LogOf(id), 1500));
    return out;
  }

  std::string dir_;
  std::unique_ptr<ZkTestServer> zk_;
  std::map<NodeId, pid_t> pids_;
  std::map<NodeId, uint16_t> ports_;
};

TEST_P(GraphServiceProcessTest, EveryNodeServesTheSameGraphAndAJoiningNodeToo) {
  StartFirstThreeStaggered();
  for (NodeId id = 1; id <= 3; ++id) WaitForGraphPort(id);
  if (HasFatalFailure()) return;
  RespClient one = Connect(ports_[1]), two = Connect(ports_[2]), three = Connect(ports_[3]);

  // Nodes: added through node 1, read through 2 and 3; updated and deleted elsewhere.
  const int64_t id = IdOf(one.Call({"NODE.ADD", kNodeType, "1", "1700000000", "hello"}));
  ASSERT_GT(id, 0) << Logs();
  EXPECT_EQ(two.Call({"NODE.GET", absl::StrCat(id), kNodeType}), NodeReply(id, kNodeType, 1, 1700000000, "hello"));
  EXPECT_EQ(three.Call({"NODE.GET", absl::StrCat(id), kNodeType}), NodeReply(id, kNodeType, 1, 1700000000, "hello"));
  EXPECT_EQ(three.Call({"NODE.GET", absl::StrCat(id), "7"}), "(nil)");  // another type
  const int64_t next = IdOf(two.Call({"NODE.ADD", kNodeType, "1", "1700000001", "second"}));
  EXPECT_EQ(next, id + 1) << "ids are sequential across nodes";
  EXPECT_EQ(three.Call({"NODE.UPDATE", absl::StrCat(next), kNodeType, "2", "1700000002", "updated"}), ":1");
  EXPECT_EQ(one.Call({"NODE.GET", absl::StrCat(next), kNodeType}),
            NodeReply(next, kNodeType, 2, 1700000002, "updated"));
  EXPECT_EQ(two.Call({"NODE.DELETE", absl::StrCat(next), kNodeType}), ":1");
  EXPECT_EQ(one.Call({"NODE.GET", absl::StrCat(next), kNodeType}), "(nil)");
  EXPECT_EQ(three.Call({"NODE.DELETE", absl::StrCat(next), kNodeType}), ":0");
  EXPECT_EQ(three.Call({"NODE.UPDATE", absl::StrCat(next), kNodeType, "3", "1", "x"}), ":0");

  // Links of (1, kLinkType) added through node 2 (time 1000 + id2), read through 1 and 3.
  constexpr int kLinks = 5;
  for (int id2 = 1; id2 <= kLinks; ++id2) {
    ASSERT_EQ(two.Call({"LINK.ADD", "1", kLinkType, absl::StrCat(id2), "1", "0", absl::StrCat(1000 + id2),
                        absl::StrCat("link", id2)}),
              ":1")
        << Logs();
  }
  EXPECT_EQ(two.Call({"LINK.ADD", "1", kLinkType, "3", "1", "1", "1003", "link3"}), ":0");  // an upsert
  auto link = [](int id2, int visibility, int version = 0) {
    return LinkReply(1, kLinkType, id2, visibility, id2 == 3 ? 1 : version, 1000 + id2, absl::StrCat("link", id2));
  };
  const std::vector<std::string> range_all = {"LINK.RANGE", "1", kLinkType, "0", "9223372036854775807", "0", "10"};
  for (RespClient* via : {&one, &three}) {
    EXPECT_EQ(via->Call({"LINK.COUNT", "1", kLinkType}), absl::StrCat(":", kLinks));
    EXPECT_EQ(via->Call(range_all), Array({link(5, 1), link(4, 1), link(3, 1), link(2, 1), link(1, 1)}));
    EXPECT_EQ(via->Call({"LINK.RANGE", "1", kLinkType, "1002", "1004", "1", "1"}), Array({link(3, 1)}));
    EXPECT_EQ(via->Call({"LINK.GET", "1", kLinkType, "4", "99", "2"}), Array({link(4, 1), link(2, 1)}));
    EXPECT_EQ(via->Call({"LINK.COUNT", "2", kLinkType}), ":0");
  }
  // A hide through node 3: counted and ranged nowhere, still got (visibility 0).
  EXPECT_EQ(three.Call({"LINK.DELETE", "1", kLinkType, "2"}), ":1");
  EXPECT_EQ(one.Call({"LINK.COUNT", "1", kLinkType}), absl::StrCat(":", kLinks - 1));
  EXPECT_EQ(two.Call({"LINK.COUNT", "1", kLinkType}), absl::StrCat(":", kLinks - 1));
  EXPECT_EQ(one.Call(range_all), Array({link(5, 1), link(4, 1), link(3, 1), link(1, 1)}));
  EXPECT_EQ(two.Call({"LINK.GET", "1", kLinkType, "2"}), Array({link(2, 0)}));
  // Re-added visible: counted again; then expunged through node 1: gone everywhere.
  EXPECT_EQ(one.Call({"LINK.ADD", "1", kLinkType, "2", "1", "0", "1002", "link2"}), ":0");
  EXPECT_EQ(three.Call({"LINK.COUNT", "1", kLinkType}), absl::StrCat(":", kLinks));
  EXPECT_EQ(one.Call({"LINK.DELETE", "1", kLinkType, "2", "EXPUNGE"}), ":1");
  EXPECT_EQ(two.Call({"LINK.GET", "1", kLinkType, "2"}), "[]");
  EXPECT_EQ(three.Call({"LINK.COUNT", "1", kLinkType}), absl::StrCat(":", kLinks - 1));
  EXPECT_EQ(three.Call({"LINK.DELETE", "1", kLinkType, "2"}), ":0");

  // NODE.RESET through node 1 sets the next id for every node.
  EXPECT_EQ(one.Call({"NODE.RESET", "5000"}), "+OK");
  EXPECT_EQ(two.Call({"NODE.ADD", kNodeType, "1", "1", "a"}), ":5000");
  EXPECT_EQ(three.Call({"NODE.ADD", kNodeType, "1", "1", "b"}), ":5001");
  EXPECT_EQ(one.Call({"NODE.GET", "5001", kNodeType}), NodeReply(5001, kNodeType, 1, 1, "b"));

  // Binary data (NUL, CR LF, every byte value) round-trips through other nodes.
  std::string node_data("a\0b\r\nc\r\n", 8);
  for (int b = 0; b < 256; ++b) node_data.push_back(static_cast<char>(b));
  const std::string link_data("\0\r\n\r\n\0x", 7);
  const int64_t binary = IdOf(one.Call({"NODE.ADD", kNodeType, "1", "7", node_data}));
  ASSERT_EQ(binary, 5002);
  EXPECT_EQ(three.Call({"NODE.GET", "5002", kNodeType}), NodeReply(5002, kNodeType, 1, 7, node_data));
  EXPECT_EQ(two.Call({"LINK.ADD", "5002", kLinkType, "5000", "1", "0", "9", link_data}), ":1");
  EXPECT_EQ(one.Call({"LINK.GET", "5002", kLinkType, "5000"}),
            Array({LinkReply(5002, kLinkType, 5000, 1, 0, 9, link_data)}));
  const std::string link_255(255, '\n');  // the largest link data
  EXPECT_EQ(two.Call({"LINK.ADD", "5002", kLinkType, "5001", "1", "0", "9", link_255}), ":1");
  EXPECT_EQ(three.Call({"LINK.GET", "5002", kLinkType, "5001"}),
            Array({LinkReply(5002, kLinkType, 5001, 1, 0, 9, link_255)}));

  // Malformed input gets Redis-style errors, changes nothing, and the node goes on.
  EXPECT_EQ(two.Call({"NODE.GET", "1"}), "-ERR wrong number of arguments for 'node.get' command");
  EXPECT_EQ(two.Call({"LINK.ADD", "1", kLinkType, "2", "1", "0", "1"}),
            "-ERR wrong number of arguments for 'link.add' command");
  EXPECT_EQ(two.Call({"NODE.GET", "abc", kNodeType}), "-ERR value is not an integer or out of range");
  EXPECT_EQ(two.Call({"NODE.GET", "01", kNodeType}), "-ERR value is not an integer or out of range");
  EXPECT_EQ(two.Call({"NODE.ADD", "4294967296", "1", "1", "x"}), "-ERR value is not an integer or out of range");
  EXPECT_EQ(two.Call({"LINK.COUNT", "1", "9223372036854775808"}), "-ERR value is not an integer or out of range");
  EXPECT_EQ(two.Call({"LINK.ADD", "1", kLinkType, "9", "1", "0", "1", std::string(256, 'x')}),
            "-ERR link data is too large (256 bytes; the limit is 255)");
  EXPECT_EQ(two.Call({"LINK.ADD", "1", kLinkType, "9", "2", "0", "1", "x"}),
            "-ERR visibility must be 0 (hidden) or 1 (visible)");
  EXPECT_EQ(two.Call({"LINK.RANGE", "1", kLinkType, "0", "1", "0", "10001"}),
            "-ERR limit is out of range, must be between 0 and 10000");
  EXPECT_EQ(two.Call({"LINK.DELETE", "1", kLinkType, "9", "NOW"}), "-ERR syntax error");
  EXPECT_EQ(two.Call({"GET", "x"}).substr(0, 29), "-ERR unknown command 'GET', w");
  EXPECT_EQ(two.Call({"PING"}), "+PONG");
  EXPECT_EQ(one.Call({"LINK.COUNT", "1", kLinkType}), absl::StrCat(":", kLinks - 1)) << "nothing was added";
  EXPECT_EQ(three.Call({"NODE.ADD", kNodeType, "1", "1", "c"}), ":5003") << "a refused NODE.ADD takes no id";
  {  // A protocol error gets Redis's reply, then the connection (only) closes.
    RespClient bad = Connect(ports_[2]);
    EXPECT_EQ(bad.Raw("*1\r\n$x\r\n").substr(0, 20), "-ERR Protocol error:");
    // Closed: no reply, and at once (RespClient may say "(timeout)" for a close, its
    // errno being stale, but a real timeout takes 10 s).
    const absl::Time start = absl::Now();
    const std::string after = bad.Call({"PING"});
    EXPECT_TRUE(after == "(closed)" || after == "(timeout)") << after;
    EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "the connection was not closed";
  }
  EXPECT_EQ(two.Call({"NODE.GET", absl::StrCat(id), kNodeType}), NodeReply(id, kNodeType, 1, 1700000000, "hello"));
  // The admin port reports the graph service's counters (farm_admin stats).
  std::map<std::string, uint64_t> counters = Counters(2, "graph");
  ASSERT_FALSE(counters.empty()) << Logs();
  EXPECT_EQ(counters["configuration_members"], 3u);
  EXPECT_GE(counters["resp_error_replies"], 11u);
  EXPECT_EQ(counters["resp_protocol_errors"], 1u);
  EXPECT_EQ(counters["resp_connections_accepted"], 2u);

  // A 4th node joins the running cluster: it serves the graph written before (after the
  // handover of any region moved to it a read may fail with an error, never answer
  // otherwise), and what is written through it is seen by the others.
  StartNode(4, "graph", 1);
  WaitForGraphPort(4);
  if (HasFatalFailure()) return;
  RespClient four = Connect(ports_[4]);
  // It adopted the index map the cluster uses (the coordinator's), not one of its own
  // built from the four members' shards: the same shards, the same digest.
  EXPECT_EQ(LoggedAfter(4, "graph: table opened: "), LoggedAfter(1, "graph: table opened: "))
      << "the joining node opened another id index than the cluster's";
  const absl::Duration handover = absl::Seconds(15);
  EXPECT_EQ(CallUntil(four, {"NODE.GET", absl::StrCat(id), kNodeType}, NodeReply(id, kNodeType, 1, 1700000000, "hello"),
                      handover),
            NodeReply(id, kNodeType, 1, 1700000000, "hello"))
      << Logs();
  EXPECT_EQ(CallUntil(four, {"NODE.GET", "5002", kNodeType}, NodeReply(5002, kNodeType, 1, 7, node_data), handover),
            NodeReply(5002, kNodeType, 1, 7, node_data)) << Logs();
  EXPECT_EQ(CallUntil(four, {"LINK.COUNT", "1", kLinkType}, absl::StrCat(":", kLinks - 1), handover),
            absl::StrCat(":", kLinks - 1));
  EXPECT_EQ(CallUntil(four, range_all, Array({link(5, 1), link(4, 1), link(3, 1), link(1, 1)}), handover),
            Array({link(5, 1), link(4, 1), link(3, 1), link(1, 1)}));
  // Writes through node 4: a link upsert and a node update (both safe to retry), and a
  // NODE.ADD (not: it is retried only on an error that says nothing changed).
  EXPECT_EQ(CallUntil(four, {"LINK.ADD", "1", kLinkType, "6", "1", "0", "1006", "link6"}, ":1", handover), ":1");
  EXPECT_EQ(CallUntil(four, {"NODE.UPDATE", absl::StrCat(id), kNodeType, "9", "1700000009", "from four"}, ":1",
                      handover),
            ":1");
  std::string added = four.Call({"NODE.ADD", kNodeType, "1", "4", "four"});
  for (const absl::Time deadline = absl::Now() + handover;
       added.find("changed nothing") != std::string::npos && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(50));
    added = four.Call({"NODE.ADD", kNodeType, "1", "4", "four"});
  }
  const int64_t four_id = IdOf(added);
  EXPECT_GE(four_id, 5004) << added << "\n" << Logs();
  for (RespClient* via : {&one, &two, &three}) {
    EXPECT_EQ(via->Call({"LINK.COUNT", "1", kLinkType}), absl::StrCat(":", kLinks));
    EXPECT_EQ(via->Call({"LINK.GET", "1", kLinkType, "6"}), Array({link(6, 1)}));
    EXPECT_EQ(via->Call({"NODE.GET", absl::StrCat(id), kNodeType}),
              NodeReply(id, kNodeType, 9, 1700000009, "from four"));
    EXPECT_EQ(via->Call({"NODE.GET", absl::StrCat(four_id), kNodeType}), NodeReply(four_id, kNodeType, 1, 4, "four"));
  }
  const absl::Time heard_by = absl::Now() + absl::Seconds(10);
  while (Counters(1, "graph")["configuration_members"] != 4 && absl::Now() < heard_by) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(Counters(1, "graph")["configuration_members"], 4u);

  // SIGTERM: node 4 stops its service and leaves cleanly; the others go on serving.
  StopCleanly(4);
  EXPECT_EQ(one.Call({"PING"}), "+PONG");
  EXPECT_EQ(CallUntil(three, {"NODE.GET", absl::StrCat(four_id), kNodeType}, NodeReply(four_id, kNodeType, 1, 4, "four"),
                      handover),
            NodeReply(four_id, kNodeType, 1, 4, "four"));
}

// One node hosting both services: its RESP port serves kv's commands and the graph's,
// pipelined together in order; a graph command cannot be queued in MULTI; the graph's
// own port (--graph_listen) serves the same graph and not kv; both stop cleanly on
// SIGTERM.
TEST_P(GraphServiceProcessTest, ANodeWithBothServicesServesKvAndGraphOnItsRespPort) {
  StartNode(1, "kv,graph", 1, {"--replication=1", "--graph_listen=127.0.0.1:0"});
  std::optional<uint16_t> resp_port = WaitForPort(1, "kv", absl::Seconds(60));
  ASSERT_TRUE(resp_port.has_value()) << "no RESP port\n" << Logs();
  WaitForGraphPort(1);
  if (HasFatalFailure()) return;
  ASSERT_NE(*resp_port, ports_[1]);
  RespClient node = Connect(*resp_port), graph_only = Connect(ports_[1]);
  EXPECT_EQ(node.Call({"SET", "k", std::string("v\0\r\n", 4)}), "+OK") << Logs();
  EXPECT_EQ(node.Call({"GET", "k"}), std::string("v\0\r\n", 4));
  const int64_t id = IdOf(node.Call({"NODE.ADD", kNodeType, "1", "1", std::string("n\0", 2)}));
  ASSERT_GT(id, 0) << Logs();
  EXPECT_EQ(node.Call({"node.get", absl::StrCat(id), kNodeType}), NodeReply(id, kNodeType, 1, 1, std::string("n\0", 2)));
  EXPECT_EQ(graph_only.Call({"NODE.GET", absl::StrCat(id), kNodeType}),
            NodeReply(id, kNodeType, 1, 1, std::string("n\0", 2)));

  // A pipeline of both services' commands: replies in order, each seeing the earlier
  // commands' writes.
  EXPECT_EQ(node.Pipeline({{"LINK.ADD", "1", kLinkType, "2", "1", "0", "1", "l"},
                           {"SET", "count", "7"},
                           {"LINK.COUNT", "1", kLinkType},
                           {"INCR", "count"},
                           {"LINK.DELETE", "1", kLinkType, "2"},
                           {"LINK.COUNT", "1", kLinkType},
                           {"GET", "count"},
                           {"NODE.GET", "x", kNodeType},
                           {"LINK.COUNT", "1"}}),
            (std::vector<std::string>{":1", "+OK", ":1", ":8", ":1", ":0", "8", "-ERR value is not an integer or out of range",
                                      "-ERR wrong number of arguments for 'link.count' command"}));
  EXPECT_EQ(node.Call({"DBSIZE"}), ":2") << "the graph's data is not kv's";

  EXPECT_EQ(node.Call({"MULTI"}), "+OK");
  EXPECT_EQ(node.Call({"SET", "m", "1"}), "+QUEUED");
  EXPECT_EQ(node.Call({"NODE.ADD", kNodeType, "1", "1", "q"}),
            "-ERR NODE.ADD is a graph command: it cannot be queued in MULTI");
  EXPECT_EQ(node.Call({"EXEC"}).substr(0, 9), "-EXECABOR");
  EXPECT_EQ(node.Call({"EXISTS", "m"}), ":0");

  EXPECT_EQ(graph_only.Call({"GET", "k"}).substr(0, 29), "-ERR unknown command 'GET', w");
  EXPECT_EQ(node.Call({"NOPE.GET", "1"}).substr(0, 34), "-ERR unknown command 'NOPE.GET', w");
  EXPECT_EQ(Counters(1, "graph")["resp_commands"], 2u) << "the graph's own port served 2 commands";
  StopCleanly(1);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, GraphServiceProcessTest, ::testing::Values("shm", "tcp"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace farm::graph
