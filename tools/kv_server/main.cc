// kv_server: the key-value store as a Redis-protocol service. Starts an in-process
// local cluster (--nodes nodes, shm fabric), the kv store on it, and a RESP server on
// every node (ports --port, --port+1, ...; 0 picks free ones), prints the ports and
// serves until SIGINT/SIGTERM or --seconds. redis-cli and redis-benchmark work
// against any node's port.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/base/command_line.h"
#include "kv/local_kv_cluster.h"
#include "kv/resp/resp_server.h"
#include "kv/table_store.h"

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
  farm::node::LocalClusterOptions cluster;
  cluster.nodes = absl::GetFlag(FLAGS_nodes);
  cluster.threads = absl::GetFlag(FLAGS_threads);
  cluster.replication = std::min(3, cluster.nodes);
  cluster.region_bytes = 256u << 20;
  cluster.capacity_bytes = 2048u << 20;
  cluster.dir = absl::StrCat(absl::GetFlag(FLAGS_dir), "-", ::getpid());
  farm::kv::TableOptions table;
  table.layout.neighbourhood = absl::GetFlag(FLAGS_neighbourhood);
  table.buckets_per_node = absl::GetFlag(FLAGS_buckets);
  absl::StatusOr<std::unique_ptr<farm::kv::LocalKvCluster>> kv = farm::kv::LocalKvCluster::Start(cluster, table);
  if (!kv.ok()) {
    std::fprintf(stderr, "kv_server: %s\n", kv.status().ToString().c_str());
    return 1;
  }
  // Per node: one TableStore per worker thread, and a RESP server on the node's loops.
  std::vector<std::vector<std::unique_ptr<farm::kv::TableStore>>> stores(cluster.nodes + 1);
  std::vector<std::unique_ptr<farm::kv::resp::RespServer>> servers;
  for (farm::NodeId id = 1; id <= static_cast<farm::NodeId>(cluster.nodes); ++id) {
    std::vector<farm::EventLoop*> loops;
    for (size_t t = 0; t < (*kv)->node(id).thread_count(); ++t) {
      loops.push_back(&(*kv)->node(id).loop(t));
      stores[id].push_back(std::make_unique<farm::kv::TableStore>((*kv)->client(id, t)));
    }
    farm::kv::resp::RespServerOptions options;
    const int port = absl::GetFlag(FLAGS_port);
    options.listen = absl::StrCat("127.0.0.1:", port == 0 ? 0 : port + static_cast<int>(id) - 1);
    options.password = absl::GetFlag(FLAGS_password);
    auto* node_stores = &stores[id];
    absl::StatusOr<std::unique_ptr<farm::kv::resp::RespServer>> server = farm::kv::resp::RespServer::Start(
        loops, [node_stores](size_t t) -> farm::kv::Store* { return (*node_stores)[t].get(); }, options);
    if (!server.ok()) {
      std::fprintf(stderr, "kv_server: node %u: %s\n", id, server.status().ToString().c_str());
      return 1;
    }
    std::printf("node %u: RESP on 127.0.0.1:%u\n", id, (*server)->port());
    servers.push_back(std::move(*server));
  }
  std::fflush(stdout);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const absl::Time until = seconds > 0 ? absl::Now() + absl::Seconds(seconds) : absl::InfiniteFuture();
  while (!stop_requested && absl::Now() < until) absl::SleepFor(absl::Milliseconds(50));
  for (auto& s : servers) s->Stop();
  servers.clear();
  // The stores are used by the servers' sessions only; drop them on their threads' side
  // after the servers stopped, then the cluster.
  kv->reset();
  return 0;
}
