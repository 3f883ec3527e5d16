// The farm and graph-resp backends against a real cluster: a ZooKeeper server and three
// farm_node processes serving the graph (--services=graph), started once for the binary.
// The contract cases (backend_contract.h) run on both backends, each in its own id
// range (they share the cluster's graph); then the linkbench binary runs
// --backend=farm,graph-resp end to end on the same cluster. Skipped when ZooKeeper
// (java and its jar) is not installed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/linkbench/backend_contract.h"
#include "tests/support/spawn.h"
#include "tests/support/zk_test_server.h"

namespace farm::linkbench {
namespace {

using farm::testing::FileTail;
using farm::testing::SpawnWithLog;
using farm::testing::ZkTestServer;

constexpr int kNodes = 3;

// The cluster, started by the environment before any test.
class GraphCluster : public ::testing::Environment {
 public:
  static GraphCluster& Get() {
    static GraphCluster* cluster = new GraphCluster();
    return *cluster;
  }

  void SetUp() override {
    char tmpl[] = "/tmp/farm-linkbench-cluster-test-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      skip_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    std::ofstream(secret_file()) << "linkbench-cluster-test-secret-0123456789";
    absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
    if (!zk.ok()) {
      skip_ = absl::StrCat("no ZooKeeper: ", zk.status().ToString());
      return;
    }
    zk_ = std::move(*zk);
    // Nodes 1 and 2, then 3 once node 1 waits for a third member that holds data (the
    // first regions go on all three: see tests/kv/kv_service_process_test.cc).
    StartNode(1);
    StartNode(2);
    if (!WaitForLog(1, "waiting for 3 members that hold data", absl::Seconds(60))) {
      error_ = absl::StrCat("node 1 did not wait for its members\n", Logs());
      return;
    }
    StartNode(3);
    for (int id = 1; id <= kNodes; ++id) {
      std::optional<int> port = WaitForGraphPort(id, absl::Seconds(60));
      if (!port.has_value()) {
        error_ = absl::StrCat("node ", id, " did not serve the graph\n", Logs());
        return;
      }
      ports_.push_back(*port);
    }
  }

  void TearDown() override {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    pids_.clear();
    zk_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Empty when the cluster runs; why the tests are skipped otherwise.
  const std::string& skip_reason() const { return skip_; }
  // Empty when the cluster started (a failure, not a skip, otherwise).
  const std::string& error() const { return error_; }
  std::string secret_file() const { return dir_ + "/secret"; }
  std::string zookeeper() const { return zk_ ? zk_->address() : ""; }
  std::string graph_resp() const {
    std::vector<std::string> a;
    for (int p : ports_) a.push_back(absl::StrCat("127.0.0.1:", p));
    return absl::StrJoin(a, ",");
  }
  BackendOptions Options() const {
    BackendOptions o;
    o.settings["zookeeper"] = zookeeper();
    o.settings["cluster"] = "lbtest";
    o.settings["secret_file"] = secret_file();
    o.settings["graph_resp"] = graph_resp();
    return o;
  }
  std::string Logs() const {
    std::string out;
    for (int id = 1; id <= static_cast<int>(pids_.size()); ++id) {
      absl::StrAppend(&out, "--- node ", id, "\n", FileTail(LogOf(id), 1500));
    }
    return out;
  }

 private:
  std::string LogOf(int id) const { return absl::StrCat(dir_, "/node-", id, ".log"); }

  void StartNode(int id) {
    const std::vector<std::string> argv = {
        FARM_NODE_BINARY, absl::StrCat("--node_id=", id), "--cluster=lbtest", "--zookeeper=" + zk_->address(),
        "--secret_file=" + secret_file(), absl::StrCat("--data_dir=", dir_, "/node-", id), "--region_mb=1024",
        "--threads=2", "--session_timeout_ms=1000", "--log_sync=off", "--services=graph",
        "--graph_listen=127.0.0.1:0", "--min_members=3"};
    absl::StatusOr<pid_t> pid = SpawnWithLog(argv, LogOf(id));
    if (pid.ok()) pids_.push_back(*pid);
  }

  bool WaitForLog(int id, const std::string& text, absl::Duration timeout) const {
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

  // From the node's "graph: RESP on ... port N" line.
  std::optional<int> WaitForGraphPort(int id, absl::Duration timeout) const {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      std::ifstream log(LogOf(id));
      for (std::string line; std::getline(log, line);) {
        if (line.find("graph: RESP on ") == std::string::npos) continue;
        int port = 0;
        if (absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &port)) return port;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return std::nullopt;
  }

  std::string dir_, skip_, error_;
  std::unique_ptr<ZkTestServer> zk_;
  std::vector<pid_t> pids_;
  std::vector<int> ports_;
};

[[maybe_unused]] ::testing::Environment* const kCluster = ::testing::AddGlobalTestEnvironment(&GraphCluster::Get());

std::string ClusterSkipReason() { return GraphCluster::Get().skip_reason(); }

ContractTarget OnCluster(const std::string& backend, int64_t id_base) {
  ContractTarget t;
  t.backend = backend;
  t.id_base = id_base;
  t.options = [] { return GraphCluster::Get().Options(); };
  t.skip_reason = &ClusterSkipReason;
  return t;
}

// Disjoint id ranges, above the end-to-end run's ids (1..1000 and the few nodes its
// request phase adds).
INSTANTIATE_TEST_SUITE_P(Cluster, BackendContractTest,
                         ::testing::Values(OnCluster("farm", 10'000'000), OnCluster("graph-resp", 20'000'000)),
                         ContractTargetName);

// A parameterized suite too, with one value, so that it runs after the contract cases
// (gtest runs plain TEST_F suites before every parameterized one): the end-to-end run
// loads over their ids' neighbourhood.
class ClusterStarted : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!ClusterSkipReason().empty()) GTEST_SKIP() << ClusterSkipReason();
    ASSERT_TRUE(GraphCluster::Get().error().empty()) << GraphCluster::Get().error();
  }
};

struct Output {
  int status = -1;
  std::string text;
};

Output RunCommand(const std::string& command) {
  Output out;
  FILE* p = popen(absl::StrCat(command, " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  const int st = pclose(p);
  out.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST_P(ClusterStarted, ErrorRepliesAreStatuses) {
  absl::StatusOr<std::unique_ptr<Backend>> b = OpenBackend("graph-resp", GraphCluster::Get().Options());
  ASSERT_TRUE(b.ok()) << b.status();
  absl::StatusOr<std::unique_ptr<Connection>> c = (*b)->Connect();
  ASSERT_TRUE(c.ok()) << c.status();
  // Node data over 1 MiB is refused before it is sent; a link over 255 bytes too.
  graph::Node big;
  big.type = graph::kDefaultNodeType;
  big.data.assign(graph::kMaxNodeDataBytes + 1, 'x');
  EXPECT_EQ((*c)->AddNode(big).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*c)->AddNodes({big}).status().code(), absl::StatusCode::kInvalidArgument);
  // The connection is still in step after a refused batch.
  EXPECT_EQ(*(*c)->CountLinks(30'000'000, graph::kDefaultLinkType), 0u);
}

TEST_P(ClusterStarted, LinkbenchRunsFarmAndGraphResp) {
  const GraphCluster& cluster = GraphCluster::Get();
  const std::string json = absl::StrCat(::testing::TempDir(), "/linkbench_cluster_test.json");
  // Bounded (the load phase has no time limit of its own): a slow store fails the test
  // with linkbench's output rather than hitting ctest's timeout.
  const Output out = RunCommand(absl::StrCat(
      "timeout 150 ", LINKBENCH_BINARY, " --backend=farm,graph-resp --nodes=1000 --requesters=2 --requests=1000 --loaders=2",
      " --progress=false --zookeeper=", cluster.zookeeper(), " --cluster=lbtest --secret_file=", cluster.secret_file(),
      " --graph_resp=", cluster.graph_resp(), " --json=", json));
  ASSERT_EQ(out.status, 0) << out.text << cluster.Logs();
  EXPECT_NE(out.text.find("1000 nodes, 963868 links expected"), std::string::npos) << out.text;
  EXPECT_EQ(Occurrences(out.text, "Loaded 963868 links"), 2u) << out.text;
  for (const char* op : {"ADD_LINK ", "DELETE_LINK ", "UPDATE_LINK ", "COUNT_LINK ", "MULTIGET_LINK ",
                         "GET_LINKS_LIST ", "ADD_NODE ", "UPDATE_NODE ", "DELETE_NODE ", "GET_NODE "}) {
    EXPECT_EQ(Occurrences(out.text, op), 2u) << op << "\n" << out.text;
  }
  EXPECT_NE(out.text.find("REQUEST PHASE COMPLETED [farm]. 2000 requests"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("REQUEST PHASE COMPLETED [graph-resp]. 2000 requests"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("COMPARISON (ratios against graph-resp)"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("[farm] lock-free ops "), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("READs per op "), std::string::npos) << out.text;
  std::ifstream in(json);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(Occurrences(s.str(), "\"ops_per_s\""), 2u) << s.str();
  EXPECT_NE(s.str().find("\"summary\": [\"lock-free ops "), std::string::npos) << s.str();
}

INSTANTIATE_TEST_SUITE_P(Cluster, ClusterStarted, ::testing::Values(3));

}  // namespace
}  // namespace farm::linkbench
