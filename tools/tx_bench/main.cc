// tx_bench: bank transfers (2 reads, 2 writes per transaction) on FaRM against the same
// transfers on Redis with WATCH/MULTI/EXEC over loopback, in one run. For each
// replication factor (--replication) it starts an in-process 3-node cluster
// (--backend), creates the accounts, and measures single-machine transfers (both
// accounts on the coordinator's node) and distributed ones (the accounts on the two
// other nodes), then lock-free reads of random accounts; then Debian's redis-server,
// started here, runs farm_redis_bank with --redis_clients connections. Every run checks
// that the total balance did not change.
//
// With --zookeeper it runs on a cluster of node processes instead (deploy/local-cluster,
// farm_node): it joins as a compute-only member with --threads worker threads, creates
// the accounts on the storage nodes (near regions each is primary of), and coordinates
// every transfer from the member: single-machine transfers are shipped to the accounts'
// primary, distributed ones commit in two phases from the member. Replication is the
// cluster's.
//
// With --log_sync=P1,P2,... (in-process clusters) each policy gets its own clusters,
// logging under --dir (put it on the disk to measure), and Redis runs once per policy
// with the AOF setting of the same promise: off - no AOF, always - appendfsync always,
// interval:MS - everysec, none - appendfsync no. Each FaRM row's ratio is to the Redis
// row of its own durability.
//
//   build/tools/tx_bench/tx_bench                       all of it (~25 s)
//   tx_bench --replication=3 --modes=distributed --seconds=5
//   tx_bench --log_sync=always,interval:1,none --replication=3 --dir=build/tx-bench
//   tx_bench --zookeeper=127.0.0.1:2181 --secret_file=build/local-cluster/secret
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "farm/base/command_line.h"
#include "farm/api/in_process_cluster.h"
#include "tools/common/compute_member.h"
#include "tools/common/redis_server.h"
#include "tools/tx_bench/farm_bank.h"
#include "tools/tx_bench/redis_bank.h"

ABSL_FLAG(std::string, backend, "shm", "fabric backend of the FaRM cluster: shm or tcp");
ABSL_FLAG(std::vector<std::string>, replication, (std::vector<std::string>{"1", "3"}),
          "replication factors r to measure");
ABSL_FLAG(std::vector<std::string>, modes, (std::vector<std::string>{"single", "distributed"}),
          "commit paths: single (single-machine), distributed (two-phase commit)");
ABSL_FLAG(int, threads, 1, "worker threads per node");
ABSL_FLAG(int, inflight, 8, "concurrent transfers (or lock-free reads) per worker thread");
ABSL_FLAG(int, accounts, 1000, "accounts per node (Redis gets as many in total)");
ABSL_FLAG(double, seconds, 2.0, "duration of each measured run");
ABSL_FLAG(int, redis_clients, 8, "Redis client connections (threads)");
ABSL_FLAG(bool, redis, true, "run the Redis baseline");
ABSL_FLAG(std::string, dir, "/tmp/farm-tx-bench", "directory for the local cluster (and its logs)");
ABSL_FLAG(std::vector<std::string>, log_sync, (std::vector<std::string>{"off"}),
          "in-process clusters: the nodes' --log_sync policies to run (off, always, interval:MS, none); "
          "Redis runs with the AOF setting of each");
ABSL_FLAG(bool, compute_node, false,
          "in-process: run the transfers from a 4th, compute-only node (the shape of --zookeeper, "
          "in one process) instead of from the 3 nodes that hold the accounts");
ABSL_FLAG(std::string, zookeeper, "",
          "run on a cluster of node processes: its ZooKeeper host:port (joins as a compute-only member)");
ABSL_FLAG(std::string, cluster, "farm", "with --zookeeper: the cluster's name");
ABSL_FLAG(std::string, secret_file, "", "with --zookeeper: the cluster's secret file");
ABSL_FLAG(std::string, member_fabric, "auto", "with --zookeeper: the member's fabric, as the nodes' --fabric");
ABSL_FLAG(std::string, member_listen, "127.0.0.1:0",
          "with --zookeeper: the member's tcp fabric address, reachable by the nodes");

namespace farm::bench {
namespace {

struct Row {
  std::string name;
  BankRunResult r;
  std::string durability;  // the --log_sync policy (FaRM) or the one Redis matched
};

// Redis's AOF setting with the promise of a --log_sync policy ("" : no AOF).
std::string AppendFsyncFor(const std::string& log_sync) {
  if (log_sync == "always") return "always";
  if (log_sync == "none") return "no";
  if (log_sync.rfind("interval:", 0) == 0) return "everysec";
  return "";
}

void Print(const Row& row, const std::map<std::string, double>& redis_rates) {
  auto it = redis_rates.find(row.durability);
  const double redis_rate = it == redis_rates.end() ? 0 : it->second;
  const double rate = row.r.committed / row.r.seconds;
  const double attempts = row.r.committed + row.r.aborted;
  std::printf("%-36s %12.0f %8.2f%% %9.1f %9.1f", row.name.c_str(), rate,
              attempts == 0 ? 0.0 : 100.0 * row.r.aborted / attempts, row.r.p50_us, row.r.p99_us);
  if (redis_rate > 0) std::printf("   %6.1fx", rate / redis_rate);
  std::printf("\n");
}

// The transfers and reads on one cluster: the rows named "FaRM <mode> <label>".
absl::Status RunOnCluster(const BankCluster& cluster, const std::string& label, const std::string& durability,
                          std::vector<Row>* rows, std::vector<std::pair<std::string, double>>* read_rates) {
  const absl::Duration duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  absl::StatusOr<Accounts> accounts = CreateAccounts(cluster, absl::GetFlag(FLAGS_accounts), 1000);
  if (!accounts.ok()) return absl::Status(accounts.status().code(), absl::StrCat("accounts: ", accounts.status().message()));
  for (const std::string& mode : absl::GetFlag(FLAGS_modes)) {
    FarmBankOptions o;
    o.inflight = absl::GetFlag(FLAGS_inflight);
    o.duration = duration;
    o.placement = mode == "distributed" ? Placement::kDistributed : Placement::kSingleMachine;
    absl::StatusOr<BankRunResult> run = RunFarmBank(cluster, *accounts, o);
    if (!run.ok()) return absl::Status(run.status().code(), absl::StrCat(mode, " ", label, ": ", run.status().message()));
    rows->push_back(Row{absl::StrCat("FaRM ", mode, " ", label), *run, durability});
  }
  absl::StatusOr<double> reads = RunLockFreeReads(cluster, *accounts, absl::GetFlag(FLAGS_inflight), duration);
  if (!reads.ok()) return absl::Status(reads.status().code(), absl::StrCat("lock-free reads: ", reads.status().message()));
  read_rates->emplace_back(label, *reads);
  return absl::OkStatus();
}

// The cluster of node processes behind --zookeeper, this process a compute-only member.
absl::Status RunOnProcesses(std::vector<Row>* rows, std::vector<std::pair<std::string, double>>* read_rates) {
  tools::ComputeMemberOptions o;
  o.zookeeper = absl::GetFlag(FLAGS_zookeeper);
  o.cluster = absl::GetFlag(FLAGS_cluster);
  o.secret_file = absl::GetFlag(FLAGS_secret_file);
  o.fabric = absl::GetFlag(FLAGS_member_fabric);
  o.listen = absl::GetFlag(FLAGS_member_listen);
  o.threads = static_cast<uint32_t>(absl::GetFlag(FLAGS_threads));
  absl::StatusOr<std::unique_ptr<tools::ComputeMember>> member = tools::ComputeMember::Join(o);
  if (!member.ok()) return member.status();
  absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> regions = (*member)->RegionsByPrimary();
  if (!regions.ok()) return regions.status();
  BankCluster cluster;
  for (const auto& [node, ids] : *regions) {
    if (ids.empty()) continue;  // primary of no region yet
    cluster.storage.push_back({&(*member)->host(), Addr(ids.front(), 0)});
  }
  if (cluster.storage.empty()) return absl::UnavailableError("no storage node is primary of a region");
  cluster.runners.push_back({&(*member)->host(), -1});
  return RunOnCluster(cluster, "cluster", "cluster", rows, read_rates);
}

int Main() {
  const absl::Duration duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  std::vector<Row> rows;
  std::vector<std::pair<std::string, double>> read_rates;
  const bool processes = !absl::GetFlag(FLAGS_zookeeper).empty();
  if (processes) {
    if (absl::Status s = RunOnProcesses(&rows, &read_rates); !s.ok()) {
      std::fprintf(stderr, "tx_bench: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  const std::vector<std::string> policies = processes ? std::vector<std::string>{} : absl::GetFlag(FLAGS_log_sync);
  for (const std::string& log_sync : policies) {
    for (const std::string& r_text : absl::GetFlag(FLAGS_replication)) {
      const uint32_t r = std::stoi(r_text);
      InProcessClusterOptions co;
      co.backend = absl::GetFlag(FLAGS_backend);
      const bool compute = absl::GetFlag(FLAGS_compute_node);
      co.nodes = compute ? 4 : 3;
      co.compute_only_nodes = compute ? 1 : 0;
      co.dir = absl::GetFlag(FLAGS_dir);
      co.threads = absl::GetFlag(FLAGS_threads);
      co.replication = r;
      co.log_sync = log_sync;
      absl::StatusOr<std::unique_ptr<InProcessCluster>> started = InProcessCluster::Start(co);
      if (!started.ok()) {
        std::fprintf(stderr, "tx_bench: cluster: %s\n", started.status().ToString().c_str());
        return 1;
      }
      BankCluster cluster;
      for (NodeId n = 1; n <= 3; ++n) {
        cluster.storage.push_back({&(*started)->host(n), Addr()});
        if (!compute) cluster.runners.push_back({&(*started)->host(n), static_cast<int>(n - 1)});
      }
      if (compute) cluster.runners.push_back({&(*started)->host(4), -1});
      const std::string label =
          absl::StrCat("r=", r, compute ? " compute" : "", policies.size() > 1 || log_sync != "off" ? " " : "",
                       policies.size() > 1 || log_sync != "off" ? log_sync : "");
      if (absl::Status s = RunOnCluster(cluster, label, log_sync, &rows, &read_rates); !s.ok()) {
        std::fprintf(stderr, "tx_bench: %s\n", s.ToString().c_str());
        return 1;
      }
    }
  }
  // Redis once per durability asked for (processes: as configured, no AOF).
  std::map<std::string, double> redis_rates;
  for (const std::string& log_sync : processes ? std::vector<std::string>{"cluster"} : policies) {
    if (!absl::GetFlag(FLAGS_redis)) break;
    const std::string appendfsync = processes ? "" : AppendFsyncFor(log_sync);
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start("/usr/bin/redis-server", appendfsync);
    if (!server.ok()) {
      std::fprintf(stderr, "tx_bench: %s\n", server.status().ToString().c_str());
      return 1;
    }
    RedisBankOptions ro;
    ro.port = (*server)->port();
    ro.accounts = 3 * absl::GetFlag(FLAGS_accounts);
    ro.clients = absl::GetFlag(FLAGS_redis_clients);
    ro.duration = duration;
    absl::StatusOr<BankRunResult> run = RunRedisBank(ro);
    if (!run.ok()) {
      std::fprintf(stderr, "tx_bench: redis: %s\n", run.status().ToString().c_str());
      return 1;
    }
    redis_rates[log_sync] = run->committed / run->seconds;
    rows.push_back(Row{absl::StrCat("Redis WATCH/MULTI/EXEC", appendfsync.empty() ? "" : " aof " + appendfsync),
                       *run, ""});
  }
  if (processes) {
    std::printf("bank transfers (2 reads + 2 writes) on a cluster of node processes, from a compute-only "
                "member with %d threads, %d in flight per thread, %.1f s runs\n",
                absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_inflight), absl::GetFlag(FLAGS_seconds));
  } else {
    std::printf("bank transfers (2 reads + 2 writes), 3 nodes x %d threads on %s, %d in flight per thread, %.1f s runs\n",
                absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_backend).c_str(),
                absl::GetFlag(FLAGS_inflight), absl::GetFlag(FLAGS_seconds));
  }
  std::printf("%-36s %12s %9s %9s %9s %9s\n", "system", "commits/s", "aborts", "p50 us", "p99 us",
              redis_rates.empty() ? "" : "vs Redis");
  for (const Row& row : rows) Print(row, redis_rates);
  for (const auto& [name, rate] : read_rates) {
    std::printf("FaRM lock-free reads %s: %.0f reads/s\n", name.c_str(), rate);
  }
  return 0;
}

}  // namespace
}  // namespace farm::bench

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "bank-transfer transactions on FaRM vs Redis WATCH/MULTI/EXEC");
  return farm::bench::Main();
}
