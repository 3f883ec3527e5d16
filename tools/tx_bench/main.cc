// tx_bench: bank transfers (2 reads, 2 writes per transaction) on a local 3-node FaRM
// cluster against the same transfers on Redis with WATCH/MULTI/EXEC over loopback, in
// one run. For each replication factor (--replication) it starts an in-process cluster
// (--backend), creates the accounts, and measures single-machine transfers (both
// accounts on the coordinator's node) and distributed ones (the accounts on the two
// other nodes), then lock-free reads of random accounts; then Debian's redis-server,
// started here, runs farm_redis_bank with --redis_clients connections. Every run checks
// that the total balance did not change.
//
//   build/tools/tx_bench/tx_bench                       all of it (~25 s)
//   tx_bench --replication=3 --modes=distributed --seconds=5
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "farm/base/command_line.h"
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
ABSL_FLAG(std::string, dir, "/tmp/farm-tx-bench", "directory for the local cluster");

namespace farm::bench {
namespace {

struct Row {
  std::string name;
  BankRunResult r;
};

void Print(const Row& row, double redis_rate) {
  const double rate = row.r.committed / row.r.seconds;
  const double attempts = row.r.committed + row.r.aborted;
  std::printf("%-24s %12.0f %8.2f%% %9.1f %9.1f", row.name.c_str(), rate,
              attempts == 0 ? 0.0 : 100.0 * row.r.aborted / attempts, row.r.p50_us, row.r.p99_us);
  if (redis_rate > 0) std::printf("   %6.1fx", rate / redis_rate);
  std::printf("\n");
}

int Main() {
  const absl::Duration duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  std::vector<Row> rows;
  std::vector<std::pair<std::string, double>> read_rates;
  for (const std::string& r_text : absl::GetFlag(FLAGS_replication)) {
    const uint32_t r = std::stoi(r_text);
    node::LocalClusterOptions co;
    co.backend = absl::GetFlag(FLAGS_backend);
    co.nodes = 3;
    co.dir = absl::GetFlag(FLAGS_dir);
    co.threads = absl::GetFlag(FLAGS_threads);
    co.replication = r;
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> cluster = node::LocalCluster::Start(co);
    if (!cluster.ok()) {
      std::fprintf(stderr, "tx_bench: cluster: %s\n", cluster.status().ToString().c_str());
      return 1;
    }
    absl::StatusOr<Accounts> accounts =
        CreateAccounts(**cluster, absl::GetFlag(FLAGS_accounts), 1000);
    if (!accounts.ok()) {
      std::fprintf(stderr, "tx_bench: accounts: %s\n", accounts.status().ToString().c_str());
      return 1;
    }
    for (const std::string& mode : absl::GetFlag(FLAGS_modes)) {
      FarmBankOptions o;
      o.inflight = absl::GetFlag(FLAGS_inflight);
      o.duration = duration;
      o.placement = mode == "distributed" ? Placement::kDistributed : Placement::kSingleMachine;
      absl::StatusOr<BankRunResult> run = RunFarmBank(**cluster, *accounts, o);
      if (!run.ok()) {
        std::fprintf(stderr, "tx_bench: %s r=%u: %s\n", mode.c_str(), r, run.status().ToString().c_str());
        return 1;
      }
      rows.push_back(Row{absl::StrCat("FaRM ", mode, " r=", r), *run});
    }
    absl::StatusOr<double> reads = RunLockFreeReads(**cluster, *accounts, absl::GetFlag(FLAGS_inflight), duration);
    if (!reads.ok()) {
      std::fprintf(stderr, "tx_bench: lock-free reads: %s\n", reads.status().ToString().c_str());
      return 1;
    }
    read_rates.emplace_back(absl::StrCat("r=", r), *reads);
  }
  double redis_rate = 0;
  if (absl::GetFlag(FLAGS_redis)) {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start();
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
    redis_rate = run->committed / run->seconds;
    rows.push_back(Row{absl::StrCat("Redis WATCH/MULTI/EXEC"), *run});
  }
  std::printf("bank transfers (2 reads + 2 writes), 3 nodes x %d threads on %s, %d in flight per thread, %.1f s runs\n",
              absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_backend).c_str(),
              absl::GetFlag(FLAGS_inflight), absl::GetFlag(FLAGS_seconds));
  std::printf("%-24s %12s %9s %9s %9s %9s\n", "system", "commits/s", "aborts", "p50 us", "p99 us",
              redis_rate > 0 ? "vs Redis" : "");
  for (const Row& row : rows) Print(row, redis_rate);
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
