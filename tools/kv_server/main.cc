// kv_server: the key-value store as a Redis-protocol service on an in-process cluster.
// Starts --nodes nodes (shm fabric) with the kv service on each — the same KvService
// that farm_node --services=kv hosts — serving RESP on ports --port, --port+1, ... (0
// picks free ones), prints the ports and serves until SIGINT/SIGTERM or --seconds.
// redis-cli and redis-benchmark work against any node's port.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/in_process_cluster.h"
#include "farm/api/service.h"
#include "farm/base/command_line.h"
#include "kv/resp/kv_service.h"

ABSL_FLAG(int, nodes, 3, "nodes in the local cluster");
ABSL_FLAG(int, threads, 2, "worker threads per node");
ABSL_FLAG(int, port, 0, "RESP port of node 1 (node i gets port + i - 1); 0: free ports");
ABSL_FLAG(std::string, password, "", "AUTH password (empty: none)");
ABSL_FLAG(uint64_t, buckets, 1 << 16, "hashtable buckets per node");
ABSL_FLAG(int, neighbourhood, 8, "hashtable neighbourhood H");
ABSL_FLAG(double, seconds, 0, "serve this long, then exit (0: until a signal)");
ABSL_FLAG(std::string, dir, "/tmp/farm-kv-server", "directory for the local cluster");

namespace {
volatile std::sig_atomic_t stop_requested = 0;
void OnSignal(int) { stop_requested = 1; }
}  // namespace

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "Serves the key-value store over the Redis protocol from an in-process cluster.");
  std::map<farm::NodeId, farm::kv::KvService*> kv;  // owned by the node's service set
  std::map<farm::NodeId, std::unique_ptr<farm::ServiceSet>> services;
  farm::InProcessClusterOptions cluster;
  cluster.nodes = absl::GetFlag(FLAGS_nodes);
  cluster.threads = absl::GetFlag(FLAGS_threads);
  cluster.replication = std::min(3, cluster.nodes);
  cluster.region_bytes = 256u << 20;
  cluster.capacity_bytes = 2048u << 20;
  cluster.dir = absl::StrCat(absl::GetFlag(FLAGS_dir), "-", ::getpid());
  cluster.before_start = [&](farm::Host& host) -> absl::Status {
    farm::kv::KvServiceOptions o;
    o.table.layout.neighbourhood = absl::GetFlag(FLAGS_neighbourhood);
    o.table.buckets_per_node = absl::GetFlag(FLAGS_buckets);
    const int port = absl::GetFlag(FLAGS_port);
    o.resp.listen = absl::StrCat("127.0.0.1:", port == 0 ? 0 : port + static_cast<int>(host.self()) - 1);
    o.resp.password = absl::GetFlag(FLAGS_password);
    absl::StatusOr<std::unique_ptr<farm::kv::KvService>> service = farm::kv::KvService::Create(host, o);
    if (!service.ok()) return service.status();
    kv[host.self()] = service->get();
    auto set = std::make_unique<farm::ServiceSet>(host);
    if (absl::Status s = set->Add(std::move(*service)); !s.ok()) return s;
    services[host.self()] = std::move(set);  // a retried start replaces the node's set
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<farm::InProcessCluster>> nodes = farm::InProcessCluster::Start(cluster);
  if (!nodes.ok()) {
    std::fprintf(stderr, "kv_server: %s\n", nodes.status().ToString().c_str());
    return 1;
  }
  // Every node's service at once, as separate node processes start: opening the table
  // waits for every member's shards.
  std::map<farm::NodeId, absl::Status> started;
  {
    std::vector<std::thread> starters;
    for (auto& [id, set] : services) started[id] = absl::OkStatus();
    for (auto& [id, set] : services) {
      starters.emplace_back([set = set.get(), result = &started[id]] { *result = set->StartAll(); });
    }
    for (std::thread& t : starters) t.join();
  }
  for (auto& [id, s] : started) {
    if (!s.ok()) {
      std::fprintf(stderr, "kv_server: node %u: %s\n", id, s.ToString().c_str());
      return 1;
    }
    std::printf("node %u: RESP on 127.0.0.1:%u\n", id, kv[id]->resp_port());
  }
  std::fflush(stdout);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const absl::Time until = seconds > 0 ? absl::Now() + absl::Seconds(seconds) : absl::InfiniteFuture();
  while (!stop_requested && absl::Now() < until) absl::SleepFor(absl::Milliseconds(50));
  services.clear();  // stops every service, before the nodes
  nodes->reset();
  return 0;
}
