// The baseline backends of the ycsb driver: "memcached" and "redis", each a private
// server process (tools/common/memcached_server.h, redis_server.h) on a free loopback
// port, started for the run and stopped after it, driven by RunSyncWorkload with one
// connection per client thread.
//
// Call from a thread that outlives the runs (main's): the servers die with the thread
// that started them.
#ifndef FARM_TOOLS_YCSB_BASELINE_BACKENDS_H_
#define FARM_TOOLS_YCSB_BASELINE_BACKENDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/ycsb/backends.h"
#include "tools/ycsb/report.h"

namespace farm::ycsb {

struct BaselineOptions {
  bool memcached_binary_protocol = false;  // see memcached_backend.h
  std::vector<std::string> resp_addresses;  // "resp": host:port of every node
};

// memcached -t config.server_threads, with memory for the records and the inserts a run
// may add (at least 64 MiB). Reports the protocol as figure "memcached_binary" (0 / 1).
absl::StatusOr<RunReport> RunMemcached(const RunConfig& config, const BaselineOptions& options);
// redis-server (single-threaded; config.server_threads does not apply).
absl::StatusOr<RunReport> RunRedis(const RunConfig& config);
// A running cluster that serves RESP on every node (farm_node --services=kv, e.g.
// deploy/local-cluster --services kv): nothing is started; client thread t connects to
// addresses[t % n], so the load spreads over the nodes. The store should start empty.
absl::StatusOr<RunReport> RunRespCluster(const RunConfig& config, const std::vector<std::string>& addresses);

// Registers "memcached", "redis" and "resp".
absl::Status RegisterBaselineBackends(BackendRegistry* registry, const BaselineOptions& options);

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_BASELINE_BACKENDS_H_
