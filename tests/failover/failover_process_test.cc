// Failover across processes (issue 17). A cluster of farm_node processes on a real
// ZooKeeper (--session_timeout_ms=2000, --log_sync=always, a data directory each) runs a
// bank workload driven by this process, a compute-only member
// (tools/common/compute_member.h), while round after round (FARM_FAILOVER_ROUNDS,
// default 3; the soak runs more) one data node is SIGKILLed at a random moment. The
// victim rotates by role: a plain data node (primary of some accounts), the
// configuration manager (CM), the newest member (a replacement an earlier round started,
// whose copies came from re-replication). After each kill the test checks, each wait
// bounded:
//   1. the next configuration drops the victim and every survivor serves in it;
//   2. the cluster serves again: every transfer chain commits a transfer touching an
//      account whose region the victim held a copy of, within the session timeout plus
//      kServeSlack (printed: the time to the first commit, to the first on an account the
//      victim was primary of, to every chain);
//   3. the new primary of every account's region lists that region on its admin port
//      (the backup was promoted; farm_admin and ComputeMember::RegionsByPrimary see it);
//   4. no money was created or destroyed, and every transfer acknowledged before or
//      during the failure is visible (each account keeps, per chain, the sequence number
//      of the last transfer that touched it; transfers whose outcome the client could not
//      know may or may not be there, never an older one);
//   5. the victim, restarted on its old data directory, refuses to join (the cluster ran
//      on without it: a removal marker in ZooKeeper says its copies are stale);
//   6. the victim is replaced by a NEW member — a new node id, an empty data directory
//      (a node that left never comes back on its old data) — which serves in a later
//      configuration, where a transaction writing every account commits (the new member
//      becomes the primary of some regions: their old primaries hand them over);
//   7. before the next kill, re-replication ends: no node reports a region with copies
//      still due (RegionStats.copies_due, where the admin port has it; else a pause).
// Throughout, kv clients GET and SET ... GET a few keys over RESP through live nodes
// (farm_node --services=kv), and each key's history across every kill must be
// linearizable (kv_history.h).
// Parameters: fabric (shm, tcp) x (nodes, r) in {(5, 3), (4, 2)}. With
// FARM_FAILOVER_REPLACE=0 victims are not replaced: a cluster then takes nodes - r kills
// (r copies stay possible) and the next round starts a new cluster (another name on the
// same ZooKeeper).
// Environment: FARM_FAILOVER_ROUNDS (kills per parameter set); FARM_FAILOVER_SETTLE_MS
// (the pause for re-replication between rounds where the admin port cannot say when it
// is done, default 2000); FARM_FAILOVER_KEEP_GOING=1 (run every step of every round after a
// failed check, to see what the later ones do); FARM_KEEP_FAILED=1 (keep a failed run's
// directory: node logs and data).
//
// The bank workload (accounts, transfers, the chains that run them): bank_load.h.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "farm/api/farm.h"
#include "farm/base/log.h"
#include "farm/base/mutex.h"
#include "farm/node/admin_protocol.h"
#include "gtest/gtest.h"
#include "membership/placement.h"
#include "tests/failover/bank_load.h"
#include "tests/failover/kv_history.h"
#include "tests/failover/region_copies.h"
#include "tests/support/spawn.h"
#include "tests/support/tx_read_all.h"
#include "tests/support/zk_test_server.h"
#include "tools/common/compute_member.h"

namespace farm {
namespace {

using failover_test::Account;
using failover_test::ChainBook;
using failover_test::Decode;
using failover_test::Encode;
using failover_test::kChains;
using failover_test::Kill;
using failover_test::Load;
using failover_test::ReadModifyWrite;
using failover_test::RegionsReReplicating;
using failover_test::Secs;
using farm::testing::FileTail;
using farm::testing::SpawnWithLog;
using farm::testing::ZkTestServer;
using membership::Configuration;

constexpr int kAccountsPerNode = 4;
constexpr int kHistoryKeys = 4;     // the kv history workload's keys...
constexpr int kHistoryClients = 2;  // ...and its clients
constexpr int64_t kInitialBalance = 1000;

constexpr absl::Duration kSessionTimeout = absl::Seconds(2);  // farm_node --session_timeout_ms
// After a kill, the configuration drops the victim within the session timeout plus this...
constexpr absl::Duration kConfigSlack = absl::Seconds(5);
// ...and every chain commits on the victim's accounts again within the session timeout
// plus this (a coordinator waits 5 s for a participant, tx::TxOptions::rpc_timeout, so a
// transaction the kill caught may take that long to fail before it is retried).
constexpr absl::Duration kServeSlack = absl::Seconds(10);
constexpr absl::Duration kStartTimeout = absl::Seconds(45);   // a node process up and serving
constexpr absl::Duration kSettleTimeout = absl::Seconds(15);  // reads and writes after failover
// Regions back to r copies (32 MB regions; only their used ranges are copied).
constexpr absl::Duration kReplicateTimeout = absl::Seconds(30);

// ---------------------------------------------------------------------------------------
// The cluster.

struct FailoverParam {
  const char* fabric;
  int nodes;
  int replication;
};

std::string ParamName(const FailoverParam& p) {
  return absl::StrCat(p.fabric, "_n", p.nodes, "_r", p.replication);
}
void PrintTo(const FailoverParam& p, std::ostream* os) { *os << ParamName(p); }

int EnvInt(const char* name, int fallback) {
  const char* env = std::getenv(name);
  int value = 0;
  return env != nullptr && absl::SimpleAtoi(env, &value) && value >= 0 ? value : fallback;
}
int Rounds() { return std::max(1, EnvInt("FARM_FAILOVER_ROUNDS", 3)); }
// Before the next kill, where the admin port does not say when re-replication is done
// (RegionsReReplicating), the test pauses this long.
absl::Duration SettleTime() { return absl::Milliseconds(EnvInt("FARM_FAILOVER_SETTLE_MS", 2000)); }

enum class Role { kPlain, kManager, kNewest };

std::string RoleName(Role r) {
  switch (r) {
    case Role::kPlain:
      return "a plain data node";
    case Role::kManager:
      return "the configuration manager";
    case Role::kNewest:
      return "the newest member";
  }
  return "?";
}

struct Victim {
  NodeId id = 0;
  Role role = Role::kPlain;
  std::string note;  // why another role was taken, if one was
  std::string Describe() const {
    return absl::StrCat("node ", id, " (", RoleName(role), note, ")");
  }
};

class FailoverProcessTest : public ::testing::TestWithParam<FailoverParam> {
 protected:
  // A farm_node process this test started.
  struct DataNode {
    pid_t pid = -1;
    std::string data_dir;
    int started_round = 0;  // 0: one of the first nodes; else the round that replaced a victim
    uint16_t resp_port = 0;  // its kv service's RESP port, once it serves
  };

  void SetUp() override {
    SetLogLevel(LogLevel::kWarning);  // the member's epoch lines would push a failure out of CI's view
    char tmpl[] = "/tmp/farm-failover-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/secret") << "failover-process-test-secret-0123456";
    absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = std::move(*zk);
  }

  void TearDown() override {
    StopCluster();
    // Each round's chains and their errors, only when something failed: a passing run
    // stays short, so a failure is within the head of the output CI shows.
    if (HasFailure() && !chain_details_.empty()) std::printf("the rounds' chains:\n%s", chain_details_.c_str());
    if (HasFailure() && std::getenv("FARM_KEEP_FAILED") != nullptr) {
      std::printf("logs and data kept in %s\n", dir_.c_str());
      return;
    }
    std::filesystem::remove_all(dir_);
  }

  const FailoverParam& P() const { return GetParam(); }
  std::string Tag() const { return absl::StrCat("[", ParamName(P()), "]"); }
  std::string LogOf(NodeId id) const { return absl::StrCat(dir_, "/", cluster_, "-node-", id, ".log"); }

  // farm_node's command line for node `id` on `data_dir`.
  std::vector<std::string> NodeArgv(NodeId id, const std::string& data_dir) const {
    return {
        FARM_NODE_BINARY,
        absl::StrCat("--node_id=", id),
        "--cluster=" + cluster_,
        "--zookeeper=" + zk_->address(),
        "--secret_file=" + dir_ + "/secret",
        "--data_dir=" + data_dir,
        "--region_mb=32",
        "--threads=2",
        absl::StrCat("--session_timeout_ms=", absl::ToInt64Milliseconds(kSessionTimeout)),
        absl::StrCat("--fabric=", P().fabric),
        absl::StrCat("--replication=", P().replication),
        absl::StrCat("--min_members=", P().nodes),
        "--log_sync=always",
        "--join_timeout_ms=40000",
        "--services=kv",
        "--kv_buckets=1024"};
  }

  // The kv history's view: the RESP ports of the live nodes (any thread).
  std::vector<uint16_t> LivePorts() {
    MutexLock lock(&ports_mu_);
    return live_ports_;
  }
  void UpdateLivePorts() {
    std::vector<uint16_t> ports;
    for (auto& [id, n] : nodes_) {
      if (n.resp_port == 0) n.resp_port = testing::LoggedRespPort(LogOf(id)).value_or(0);
      if (n.resp_port != 0) ports.push_back(n.resp_port);
    }
    MutexLock lock(&ports_mu_);
    live_ports_ = std::move(ports);
  }

  // Stops the kv history clients and checks every key's history (once per cluster).
  void CheckHistory() {
    if (history_ == nullptr) return;
    history_->Stop();
    size_t operations = 0, pending = 0;
    absl::Status linearizable = history_->Check(&operations, &pending);
    EXPECT_TRUE(linearizable.ok()) << "the kv history across the kills is not linearizable: " << linearizable;
    EXPECT_GT(operations, 0u) << "the kv history workload did nothing";
    std::printf("%s kv history: %zu operations (%zu of unknown outcome) on %d keys, %s\n", Tag().c_str(), operations,
                pending, kHistoryKeys, linearizable.ok() ? "linearizable" : "NOT linearizable");
    history_.reset();
  }

  void StartNode(NodeId id, int round) {
    DataNode n;
    n.data_dir = absl::StrCat(dir_, "/", cluster_, "-node-", id);  // a new id: never used before, empty
    n.started_round = round;
    absl::StatusOr<pid_t> pid = SpawnWithLog(NodeArgv(id, n.data_dir), LogOf(id));
    ASSERT_TRUE(pid.ok()) << pid.status();
    n.pid = *pid;
    nodes_[id] = n;
  }

  // Waits until node `id` logged "ready" and reports over its admin port that it serves
  // in the newest configuration it knows, linked to every other member of it. An error
  // naming what it lacked (or how its process ended) after `deadline`.
  absl::Status WaitServing(NodeId id, absl::Time deadline) {
    std::string lacking = "no \"ready\" line in its log";
    while (absl::Now() < deadline) {
      int status = 0;
      if (::waitpid(nodes_[id].pid, &status, WNOHANG) == nodes_[id].pid) {
        nodes_.erase(id);
        return absl::InternalError(absl::StrCat("node ", id, " exited (wait status ", status, ")"));
      }
      if (std::optional<std::string> admin = testing::LoggedAdminAddress(LogOf(id))) {
        admin_[id] = *admin;
        absl::StatusOr<node::NodeStats> s = Stats(id);
        std::shared_ptr<const Configuration> c = member_ ? Config() : nullptr;
        if (!s.ok()) {
          lacking = absl::StrCat("its admin port: ", s.status().ToString());
        } else if (!s->serving()) {
          lacking = absl::StrCat("not serving (epoch ", s->epoch(), ", session ", s->session(),
                                 ", last error '", s->last_error(), "')");
        } else if (c != nullptr && (!c->Contains(id) || s->epoch() != c->epoch)) {
          lacking =
              absl::StrCat("serving in epoch ", s->epoch(), ", the member sees ", c->Summary());
        } else if (c != nullptr && s->connected_peers() + 1 < c->members.size()) {
          lacking = absl::StrCat("linked to ", s->connected_peers(), " of the other ",
                                 c->members.size() - 1, " members of ", c->Summary());
        } else if (c == nullptr && s->connected_peers() + 1 < static_cast<uint32_t>(P().nodes)) {
          lacking = absl::StrCat("linked to ", s->connected_peers(), " peers");
        } else if (c == nullptr && s->regions_size() == 0) {
          lacking = "no region yet";
        } else {
          return absl::OkStatus();
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return absl::DeadlineExceededError(absl::StrCat("node ", id, ": ", lacking));
  }

  absl::StatusOr<node::NodeStats> Stats(NodeId id) {
    auto it = admin_.find(id);
    if (it == admin_.end())
      return absl::NotFoundError(absl::StrCat("no admin address for node ", id));
    node::AdminRequest request;
    request.set_format(node::kAdminFormat);
    request.set_command(node::AdminRequest::STATS);
    absl::StatusOr<node::AdminResponse> r = node::AdminCall(it->second, request, absl::Seconds(2));
    if (!r.ok()) return r.status();
    return r->stats();
  }

  // The configuration this process (the compute member) applied last.
  std::shared_ptr<const Configuration> Config() { return member_->node().membership().current(); }

  void JoinMember() {
    tools::ComputeMemberOptions o;
    o.zookeeper = zk_->address();
    o.cluster = cluster_;
    o.secret_file = dir_ + "/secret";
    o.fabric = P().fabric;
    o.threads = kChains;
    absl::StatusOr<std::unique_ptr<tools::ComputeMember>> m = tools::ComputeMember::Join(o);
    ASSERT_TRUE(m.ok()) << m.status();
    member_ = std::move(*m);
  }

  // The log tails of the live data nodes and of the last two victims (their last words).
  std::string Logs() {
    std::string out;
    auto append = [&](NodeId id, const char* what) {
      absl::StrAppend(&out, "--- node ", id, what, ": ", LogOf(id), "\n", FileTail(LogOf(id), 1500),
                      "\n");
    };
    for (const auto& [id, n] : nodes_) append(id, "");
    for (size_t i = killed_.size() >= 2 ? killed_.size() - 2 : 0; i < killed_.size(); ++i)
      append(killed_[i], " (killed)");
    return out;
  }

  // Accounts whose region `node` is primary of / holds a copy of, in `config`.
  std::pair<std::set<size_t>, std::set<size_t>> AccountsOf(NodeId node,
                                                           const Configuration& config) {
    std::set<size_t> primary, affected;
    absl::StatusOr<membership::Placement> placement = membership::Placement::Create(config);
    if (!placement.ok()) return {};
    for (size_t i = 0; i < accounts_.size(); ++i) {
      absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(accounts_[i].addr.region());
      if (!rs.ok()) continue;
      if (rs->primary() == node) primary.insert(i);
      if (rs->Contains(node)) affected.insert(i);
    }
    return {primary, affected};
  }

  // This round's victim: the role in rotation (plain, manager, newest), falling back to a
  // plain data node when the role's holder is not a data node this test can kill (the
  // compute member can become the manager once every original node was replaced) or there
  // is no replacement yet.
  Victim PickVictim(int round, const Configuration& config) {
    Victim v;
    const Role wanted = static_cast<Role>((round - 1) % 3);
    if (wanted == Role::kManager) {
      if (nodes_.contains(config.manager)) return {config.manager, Role::kManager, ""};
      v.note = absl::StrCat("; the manager is node ", config.manager, ", this process");
    }
    if (wanted == Role::kNewest) {
      NodeId newest = 0;
      for (const auto& [id, n] : nodes_) {
        if (n.started_round > 0 && id != config.manager &&
            (newest == 0 || n.started_round > nodes_[newest].started_round)) {
          newest = id;
        }
      }
      if (newest != 0)
        return {newest, Role::kNewest,
                absl::StrCat(", started in round ", nodes_[newest].started_round)};
      v.note = "; no replacement yet";
    }
    // A plain data node, preferably the primary of some accounts, by rotation.
    std::vector<NodeId> plain, with_accounts;
    for (const auto& [id, n] : nodes_) {
      if (id == config.manager) continue;
      plain.push_back(id);
      if (!AccountsOf(id, config).first.empty()) with_accounts.push_back(id);
    }
    const std::vector<NodeId>& from = with_accounts.empty() ? plain : with_accounts;
    v.id = from[static_cast<size_t>(round / 3) % from.size()];
    v.role = Role::kPlain;
    if (wanted != Role::kPlain) v.note = absl::StrCat(", instead of ", RoleName(wanted), v.note);
    return v;
  }

  // Check 1: the configuration the member applies drops `victim`, in a later epoch than
  // `before`, and every survivor serves in it (or a later one).
  std::shared_ptr<const Configuration> WaitConfigWithout(NodeId victim, uint64_t before,
                                                         absl::Time deadline, std::string* why) {
    std::shared_ptr<const Configuration> c;
    while (absl::Now() < deadline) {
      c = Config();
      if (c != nullptr && c->epoch > before && !c->Contains(victim)) break;
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (c == nullptr || c->Contains(victim)) {
      *why = absl::StrCat("the member's configuration still lists it: ",
                          c ? c->Summary() : std::string("none"));
      return nullptr;
    }
    for (const auto& [id, n] : nodes_) {
      std::string lacking;
      while (true) {
        absl::StatusOr<node::NodeStats> s = Stats(id);
        if (s.ok() && s->serving() && s->epoch() >= c->epoch) break;
        lacking = s.ok() ? absl::StrCat("serving ", s->serving(), " in epoch ", s->epoch(),
                                        ", last error '", s->last_error(), "'")
                         : s.status().ToString();
        if (absl::Now() >= deadline) {
          *why = absl::StrCat("survivor ", id, " does not serve in ", c->Summary(), ": ", lacking);
          return nullptr;
        }
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
    return c;
  }

  // Check 3: the primary of each account's region, in the current configuration, lists
  // the region on its admin port. An empty string, or what is missing.
  std::string CheckPrimariesListRegions(absl::Time deadline) {
    std::string missing;
    do {
      missing.clear();
      std::shared_ptr<const Configuration> c = Config();
      absl::StatusOr<membership::Placement> placement = membership::Placement::Create(*c);
      if (!placement.ok()) return placement.status().ToString();
      std::map<RegionId, NodeId> regions;
      for (const FatPtr& a : accounts_) {
        absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(a.addr.region());
        if (rs.ok()) regions[a.addr.region()] = rs->primary();
      }
      for (const auto& [region, primary] : regions) {
        absl::StatusOr<node::NodeStats> s = Stats(primary);
        std::vector<uint32_t> listed;
        if (s.ok()) {
          for (const node::RegionStats& r : s->regions()) listed.push_back(r.id());
        }
        if (std::find(listed.begin(), listed.end(), region) == listed.end()) {
          absl::StrAppend(&missing, "region ", region, " is primary on node ", primary, " in ",
                          c->Summary(), ", which lists ",
                          s.ok() ? absl::StrCat("regions [", absl::StrJoin(listed, ","), "]")
                                 : s.status().ToString(),
                          "; ");
        }
      }
      if (missing.empty()) return "";
      absl::SleepFor(absl::Milliseconds(100));
    } while (absl::Now() < deadline);
    return missing;
  }

  // Check 4: every account read in one transaction (retried for kSettleTimeout): the
  // total holds and each chain's acknowledged transfers are visible. `failure` names the
  // kill, for messages.
  void CheckBank(const std::string& failure) {
    absl::StatusOr<std::vector<std::string>> seen = absl::UnavailableError("not read");
    const absl::Time deadline = absl::Now() + kSettleTimeout;
    while (absl::Now() < deadline) {
      seen = testing::ReadAllInOneTx(member_->node(), accounts_);
      if (seen.ok()) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    if (!seen.ok()) {
      ADD_FAILURE() << "the accounts could not be read in one transaction for "
                    << Secs(kSettleTimeout) << " after the failure of " << failure << ": "
                    << seen.status() << "\n"
                    << Logs();
      return;
    }
    int64_t sum = 0;
    int invisible = 0;
    for (size_t i = 0; i < seen->size(); ++i) {
      const Account a = Decode((*seen)[i].data(), (*seen)[i].size());
      sum += a.balance;
      for (int c = 0; c < kChains; ++c) {
        const ChainBook& book = books_[c];
        auto acked = book.acked.find(i);
        if (acked == book.acked.end()) continue;
        auto unknown = book.unknown.find(i);
        const int64_t held = a.last[c];
        // The chain's last acknowledged transfer touching the account, or a later one
        // whose outcome it could not know; an older one means an acknowledged commit is lost.
        const bool ok = held == acked->second ||
                        (unknown != book.unknown.end() && unknown->second.contains(held));
        EXPECT_TRUE(ok) << "account " << i << " (region " << accounts_[i].addr.region()
                        << ") shows chain " << c << "'s transfer " << held << ", but transfer "
                        << acked->second << " was acknowledged before or during the failure of "
                        << failure;
        invisible += ok ? 0 : 1;
      }
    }
    const int64_t total = kInitialBalance * static_cast<int64_t>(accounts_.size());
    EXPECT_EQ(sum, total) << "money was created or destroyed across the failure of " << failure;
    EXPECT_EQ(invisible, 0) << invisible
                            << " acknowledged transfers are not visible after the failure of "
                            << failure;
  }

  // Check 6: re-replication ends — no live node reports a region still re-replicating
  // (RegionsReReplicating) — within kReplicateTimeout. Where the admin port does not say,
  // a pause of SettleTime(). What it did, for the round's summary.
  std::string WaitReReplicated(const std::string& failure) {
    const absl::Time start = absl::Now();
    std::vector<std::string> busy;
    while (true) {
      busy.clear();
      for (const auto& [id, n] : nodes_) {
        absl::StatusOr<node::NodeStats> s = Stats(id);
        if (!s.ok()) {
          busy.push_back(absl::StrCat("node ", id, ": ", s.status().ToString()));
          continue;
        }
        std::optional<std::vector<std::string>> regions = RegionsReReplicating(*s);
        if (!regions.has_value()) {
          absl::SleepFor(SettleTime());
          return absl::StrCat("paused ", Secs(SettleTime()), " for it (no RegionStats.copies_due)");
        }
        for (const std::string& r : *regions) busy.push_back(absl::StrCat("node ", id, ": ", r));
      }
      if (busy.empty()) return absl::StrCat("done after ", Secs(absl::Now() - start));
      if (absl::Now() - start > kReplicateTimeout) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "after the failure of " << failure
                  << " and its replacement, regions still re-replicate " << Secs(kReplicateTimeout)
                  << " later: " << absl::StrJoin(busy, "; ") << "\n"
                  << Logs();
    return "not done";
  }

  // Check 5 (the end): a transaction writing every account commits, so every region has
  // a working replica set in the configuration with the replacement. Retried until
  // `deadline`; the last error otherwise.
  absl::Status WriteEveryAccount(absl::Time deadline) {
    absl::Status last = absl::UnavailableError("not tried");
    while (absl::Now() < deadline) {
      std::optional<absl::Status> s =
          ReadModifyWrite(member_->node(), 0, accounts_, [](std::vector<Account>&) {});
      last = s.value_or(absl::DeadlineExceededError("no completion"));
      if (last.ok()) return last;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return last;
  }

  // Lines of every node log of this test that contain `needle`.
  int CountInLogs(const std::string& needle) const {
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().extension() != ".log") continue;
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
    }
    return n;
  }

  // Everything of the current cluster stops; the next StartCluster begins a new one
  // (another cluster name on the same ZooKeeper, new directories).
  void StopCluster() {
    CheckHistory();
    load_.reset();
    member_.reset();
    for (auto& [id, n] : nodes_) ::kill(n.pid, SIGKILL);
    for (auto& [id, n] : nodes_) ::waitpid(n.pid, nullptr, 0);
    nodes_.clear();
    admin_.clear();
    killed_.clear();
    accounts_.clear();
    for (const ChainBook& book : books_) acked_before_ += book.acked_transfers;
    books_.clear();
  }

  // The first nodes, the member, and kAccountsPerNode accounts in a region each node is
  // primary of.
  void StartCluster(int generation) {
    cluster_ = absl::StrCat("failover", generation);
    books_.assign(kChains, ChainBook{});
    for (NodeId id = 1; id <= static_cast<NodeId>(P().nodes); ++id) StartNode(id, 0);
    const absl::Time deadline = absl::Now() + kStartTimeout;
    for (NodeId id = 1; id <= static_cast<NodeId>(P().nodes); ++id) {
      absl::Status s = WaitServing(id, deadline);
      ASSERT_TRUE(s.ok()) << "the cluster did not start: " << s << "\n" << Logs();
    }
    next_id_ = P().nodes + 1;
    JoinMember();
    absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> regions =
        member_->RegionsByPrimary();
    ASSERT_TRUE(regions.ok()) << regions.status();
    ASSERT_EQ(regions->size(), static_cast<size_t>(P().nodes));
    Account initial;
    initial.balance = kInitialBalance;
    for (const auto& [primary, ids] : *regions) {
      ASSERT_FALSE(ids.empty()) << "node " << primary << " is primary of no region";
      for (int i = 0; i < kAccountsPerNode; ++i) {
        absl::StatusOr<FatPtr> p =
            testing::CreateObjectInOneTx(member_->node(), Encode(initial), Addr(ids.front(), 0));
        ASSERT_TRUE(p.ok()) << p.status();
        accounts_.push_back(*p);
      }
    }
  }

  std::string dir_;
  std::string chain_details_;  // per round, printed by TearDown when the test failed
  std::string cluster_ = "failover0";    // the current cluster's name
  int64_t acked_before_ = 0;             // transfers acknowledged in earlier clusters
  std::unique_ptr<ZkTestServer> zk_;
  std::map<NodeId, DataNode> nodes_;     // live data nodes
  std::map<NodeId, std::string> admin_;  // admin addresses, from the logs
  std::vector<NodeId> killed_;           // the victims, in order
  NodeId next_id_ = 0;
  std::unique_ptr<tools::ComputeMember> member_;
  std::vector<FatPtr> accounts_;
  std::vector<ChainBook> books_;
  std::unique_ptr<Load> load_;
  std::unique_ptr<testing::KvHistory> history_;
  Mutex ports_mu_;
  std::vector<uint16_t> live_ports_ ABSL_GUARDED_BY(ports_mu_);
};

TEST_P(FailoverProcessTest, ClusterServesAgainAfterEachKillWithoutLosingAcknowledgedTransfers) {
  absl::BitGen gen;
  const int rounds = Rounds();
  // Without replacements a cluster of n nodes takes n - r kills — r copies stay possible —
  // and the next rounds start a new cluster.
  const bool replace = EnvInt("FARM_FAILOVER_REPLACE", 1) != 0;
  const int kills_per_cluster = replace ? rounds : std::max(1, P().nodes - P().replication);
  int generation = 0;
  // A failed check ends the test, unless FARM_FAILOVER_KEEP_GOING=1 asks to see every
  // round anyway (while failover is being built: what each later step does).
  const bool keep_going = EnvInt("FARM_FAILOVER_KEEP_GOING", 0) != 0;
  auto show = [](const std::optional<absl::Duration>& d) {
    return d ? Secs(*d) : std::string("n/a");
  };
  for (int round = 1; round <= rounds; ++round) {
    if ((round - 1) % kills_per_cluster == 0) {
      if (round > 1) StopCluster();
      ASSERT_NO_FATAL_FAILURE(StartCluster(generation++));
      UpdateLivePorts();
      history_ = std::make_unique<testing::KvHistory>([this] { return LivePorts(); }, kHistoryKeys, kHistoryClients);
    }
    std::shared_ptr<const Configuration> before = Config();
    const Victim victim = PickVictim(round, *before);
    const auto [primary_of, copies_of] = AccountsOf(victim.id, *before);
    const std::string who = absl::StrCat(Tag(), " round ", round, ": ", victim.Describe());
    SCOPED_TRACE(who);

    // The kill, at a random moment under load.
    load_ = std::make_unique<Load>(member_->node(), accounts_, books_, round);
    const absl::Duration into_load = absl::Milliseconds(absl::Uniform(gen, 300, 1500));
    absl::SleepFor(into_load);
    ::kill(nodes_[victim.id].pid, SIGKILL);
    ::waitpid(nodes_[victim.id].pid, nullptr, 0);
    const absl::Time killed = absl::Now();
    load_->Killed({killed, primary_of, copies_of});
    const std::string victim_dir = nodes_[victim.id].data_dir;
    nodes_.erase(victim.id);
    UpdateLivePorts();
    killed_.push_back(victim.id);
    std::printf(
        "%s killed, %s into the load; it was primary of %zu accounts and held copies of %zu; %s\n",
        who.c_str(), Secs(into_load).c_str(), primary_of.size(), copies_of.size(),
        before->Summary().c_str());

    // 1. A configuration without it, where every survivor serves.
    std::string why;
    std::shared_ptr<const Configuration> after =
        WaitConfigWithout(victim.id, before->epoch, killed + kSessionTimeout + kConfigSlack, &why);
    if (after == nullptr) {
      ADD_FAILURE() << "after the SIGKILL of " << victim.Describe()
                    << ", no configuration without it within "
                    << Secs(kSessionTimeout + kConfigSlack) << " (session timeout "
                    << Secs(kSessionTimeout) << "): " << why << "\n"
                    << Logs();
      if (!keep_going) return;
      after = Config();
    }
    const absl::Duration reconfigured = absl::Now() - killed;

    // 2. Serving again: every chain commits on the victim's accounts.
    const bool recovered = load_->WaitRecovered(killed + kSessionTimeout + kServeSlack);
    const std::string chains = load_->Describe();
    const Load::Times times = load_->Measured();
    std::printf(
        "  %s after %s; first commit after %s, first on an account it was primary of after %s, "
        "every chain on its accounts after %s\n",
        after->Summary().c_str(), Secs(reconfigured).c_str(), show(times.first_commit).c_str(),
        show(times.first_on_primary).c_str(), show(times.every_chain).c_str());
    if (recovered) absl::StrAppend(&chain_details_, who, ":\n", chains);  // else the failure shows them
    if (!recovered) {
      ADD_FAILURE() << "after the SIGKILL of " << victim.Describe() << " and " << after->Summary()
                    << " (reached " << Secs(reconfigured)
                    << " after the kill), the cluster did not serve its accounts again within "
                    << Secs(kSessionTimeout + kServeSlack)
                    << ": expected every chain to commit a transfer touching "
                    << "an account whose region it held a copy of (" << copies_of.size()
                    << " accounts; primary of " << primary_of.size() << ")\n"
                    << chains << Logs();
      if (!keep_going) return;
    }
    load_->Stop();

    // 3. The promoted primaries list their regions.
    const std::string unlisted =
        CheckPrimariesListRegions(absl::Now() + (recovered ? kSettleTimeout : absl::Seconds(1)));
    EXPECT_TRUE(unlisted.empty()) << "after the failover of " << victim.Describe() << ": "
                                  << unlisted;

    // 4. The bank: total and every acknowledged transfer.
    CheckBank(absl::StrCat(victim.Describe(), " in round ", round));
    load_.reset();
    if (HasFailure() && !keep_going) return;

    // 5. Restarted on its old data directory, the victim refuses to join: the cluster
    // ran on without it, so its copies are stale (a removal marker says so).
    {
      const std::string log = absl::StrCat(dir_, "/", cluster_, "-stale-", victim.id, ".log");
      std::vector<std::string> argv = NodeArgv(victim.id, victim_dir);
      absl::StatusOr<pid_t> pid = SpawnWithLog(argv, log);
      ASSERT_TRUE(pid.ok()) << pid.status();
      int status = 0;
      pid_t done = 0;
      const absl::Time deadline = absl::Now() + kStartTimeout;
      while ((done = ::waitpid(*pid, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(50));
      }
      if (done == 0) {
        ::kill(*pid, SIGKILL);
        ::waitpid(*pid, nullptr, 0);
      }
      const std::string said = FileTail(log, 4000);
      EXPECT_TRUE(done == *pid && WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
                  said.find("was removed from cluster") != std::string::npos)
          << victim.Describe() << ", restarted on its old data directory, must refuse to join:\n" << said;
      std::filesystem::remove_all(victim_dir);  // it never comes back on it
    }

    // 6. A new member in its place: a new id, an empty data directory.
    if (!replace) {
      const std::string replicated = WaitReReplicated(victim.Describe());
      std::printf("  re-replication: %s\n", replicated.c_str());
      if (HasFailure() && !keep_going) return;
      continue;
    }
    const NodeId fresh = next_id_++;
    const absl::Time restart = absl::Now();
    ASSERT_NO_FATAL_FAILURE(StartNode(fresh, round));
    absl::Status serving = WaitServing(fresh, restart + kStartTimeout);
    if (!serving.ok()) {
      ADD_FAILURE() << "the replacement of " << victim.Describe() << " did not serve within "
                    << Secs(kStartTimeout) << ": " << serving << "\n"
                    << Logs();
      if (!keep_going) return;
    }
    const absl::Duration joined = absl::Now() - restart;
    UpdateLivePorts();
    absl::Status written = WriteEveryAccount(absl::Now() + kSettleTimeout);
    EXPECT_TRUE(written.ok()) << "with node " << fresh << " (replacing " << victim.Describe()
                              << ") in " << Config()->Summary()
                              << ", a transaction writing every account did not commit for "
                              << Secs(kSettleTimeout) << ": " << written << "\n"
                              << Logs();
    std::printf(
        "  replaced by node %d (empty data directory): serving after %s in %s; writing every "
        "account: %s\n",
        static_cast<int>(fresh), Secs(joined).c_str(), Config()->Summary().c_str(),
        written.ToString().c_str());
    if (HasFailure() && !keep_going) return;

    // 6. Every region back to r copies before the next kill.
    const std::string replicated = WaitReReplicated(victim.Describe());
    std::printf("  re-replication: %s\n", replicated.c_str());
    if (HasFailure() && !keep_going) return;
  }
  CheckHistory();
  int64_t acked = acked_before_;
  for (const ChainBook& book : books_) acked += book.acked_transfers;
  std::printf("%s %d kills; %lld transfers acknowledged; %d regions promoted, %d handed over to a new member\n",
              Tag().c_str(), rounds, static_cast<long long>(acked), CountInLogs("promoted: this node is its primary"),
              CountInLogs("handed over to node"));
  EXPECT_GT(acked, 0);
}

INSTANTIATE_TEST_SUITE_P(Failover, FailoverProcessTest,
                         ::testing::Values(FailoverParam{"shm", 5, 3}, FailoverParam{"shm", 4, 2},
                                           FailoverParam{"tcp", 5, 3}, FailoverParam{"tcp", 4, 2}),
                         [](const auto& info) { return ParamName(info.param); });

}  // namespace
}  // namespace farm
