// RunFarmWorkload: YCSB inside a FaRM cluster, as the paper ran it: a local cluster of
// `nodes` nodes (kv::LocalKvCluster, one process), the key-value store on it, and
// config.threads application threads on every node (the nodes' worker threads), each a
// FarmDriver with `window` operations in flight.
//
//   1. Starts the cluster and the table, sized so that the loaded records fill
//      `occupancy` of the bucket slots (the table does not resize).
//   2. Load phase: the records split evenly across all application threads, progress on
//      stderr; any failed insert fails the run. The chained layout's expansions that the
//      load started run to their end (DriverRunOptions::after_load); a scan must then
//      count every record.
//   3. Transaction phase: as the synchronous runner's (sync_runner.h): by time after a
//      warm-up, or by operation count.
//   4. The RunReport, with figures: nodes, app_threads, window; reads_per_lookup,
//      bytes_per_lookup and restarts_per_lookup (fabric READs or local copies of the
//      lock-free lookups, over the whole run); occupancy, space_utilisation (bytes of
//      key-value pairs / bytes of memory the table uses), overflow_blocks and
//      out_of_line_pairs from a scan after the load.
//
// Blocks the calling thread for the whole run; stops the cluster before returning.
#ifndef FARM_TOOLS_YCSB_FARM_RUNNER_H_
#define FARM_TOOLS_YCSB_FARM_RUNNER_H_

#include <cstdint>
#include <functional>
#include <string>

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "kv/kv_client.h"
#include "tools/ycsb/backends.h"
#include "tools/ycsb/report.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {

struct FarmRunOptions {
  int nodes = 2;               // nodes that hold the table
  // With compute_nodes > 0 the application threads run only on that many more nodes,
  // which hold no data (compute-only members, as ycsb --backend=cluster joins a
  // cluster of processes); else on every node.
  int compute_nodes = 0;
  std::string fabric = "shm";  // "shm" or "tcp"
  int replication = 0;         // copies of each region; 0: min(3, nodes)
  int window = 16;             // operations in flight per application thread
  double occupancy = 0.9;      // of the bucket slots, once the records are loaded
  uint32_t neighbourhood = 8;  // H
  std::string layout = "hopscotch";  // the table layout (kv/table_layouts.h)
  std::string dir = "/tmp/farm-ycsb";  // the cluster's directory (pid appended)
  std::string log_sync = "off";        // the nodes' --log_sync
  bool readable_commits = true;        // the nodes' --readable_commits (tx/participant.h)
  std::string name = "farm";           // the backend's name in the report
};

// InvalidArgument for bad options or workload; the cluster's or the table's error when
// they cannot start; the load's first error. Errors of the transaction phase are
// counted in the report.
absl::StatusOr<RunReport> RunFarmWorkload(const RunConfig& config, const FarmRunOptions& options);

// Where one driver runs: a worker thread of a node and the table's client there.
struct DriverPlace {
  Host* host;
  size_t thread;
  kv::KvClient* client;
};

struct DriverRunOptions {
  std::string backend = "farm";  // the report's name
  int window = 16;
  std::vector<std::pair<std::string, double>> figures;  // added to the report first
  // The table holds exactly the loaded records (a table of the run's own); else at
  // least them (a running cluster's table, which may hold other keys).
  bool exact_pair_count = true;
  // Runs after the load, before the table is scanned and the workload measured (the
  // in-process cluster: waits for the chained layout's expansions); its error ends the
  // run.
  std::function<absl::Status()> after_load;
};

// Steps 2 to 4 above, with one FarmDriver per place (each on its own thread), on any
// cluster whose table the places' clients have open: the in-process one of
// RunFarmWorkload, or a running cluster joined as a compute-only member
// (cluster_runner.h). The places and their clients must outlive the call.
absl::StatusOr<RunReport> RunDrivers(const RunConfig& config, CoreWorkload& workload,
                                     const std::vector<DriverPlace>& places, const DriverRunOptions& options);

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_FARM_RUNNER_H_
