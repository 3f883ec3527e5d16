// ycsb: the YCSB workload driver. Runs one workload (A-F or custom properties) against
// each backend named by --backend, one after the other, prints each run's report and a
// comparison of the backends, and writes them all as JSON with --json.
//
//   build/tools/ycsb/ycsb --backend=farm,memcached,redis --workload=c --preset=farm
//       --records=100000 --seconds=3 --threads=1 --farm_nodes=2
//   ycsb --backend=redis --workload=a --properties=readproportion=0.9,updateproportion=0.1
//
//   ycsb --backend=farm:hopscotch,farm:linear,farm:chained,farm:cuckoo --workload=c,a
//       (farm:<layout>: the farm backend with that table layout, several in one run)
//   ycsb --backend=farm,farm-exclusive,memcached --workload=c,b --farm_nodes=3   (several
//       workloads: each runs on every backend, then a table relates each backend's READ
//       p99 to its first workload's; farm-exclusive is farm with FaRM's exclusive commits)
//
// See tools/ycsb/README.md for the mapping to YCSB.
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "farm/base/command_line.h"
#include "tools/ycsb/backends.h"
#include "tools/ycsb/baseline_backends.h"
#include "tools/ycsb/plot.h"
#include "tools/ycsb/cluster_runner.h"
#include "tools/ycsb/farm_runner.h"
#include "tools/ycsb/report.h"
#include "tools/ycsb/workload.h"

ABSL_FLAG(std::vector<std::string>, backend, (std::vector<std::string>{"memcached", "redis"}),
          "backends to run, in order (comma list); the comparison is relative to the first");
ABSL_FLAG(std::vector<std::string>, workload, (std::vector<std::string>{"a"}),
          "YCSB core workloads to run, in order (comma list of a, b, c, d, e, f)");
ABSL_FLAG(std::string, preset, "", "\"farm\": 16-byte keys, one 32-byte field (FaRM's setting)");
ABSL_FLAG(std::string, distribution, "",
          "request distribution override: uniform, zipfian, latest, hotspot");
ABSL_FLAG(int64_t, records, -1, "recordcount (-1: the workload's, 1000)");
ABSL_FLAG(int64_t, operations, 0,
          "operationcount: run this many operations instead of --seconds (0: by time)");
ABSL_FLAG(int, field_count, -1, "fieldcount (-1: the workload's)");
ABSL_FLAG(int, field_length, -1, "fieldlength in bytes (-1: the workload's)");
ABSL_FLAG(std::vector<std::string>, properties, {},
          "more YCSB properties, name=value, comma-separated (applied last)");
ABSL_FLAG(double, seconds, 10, "measured duration of the transaction phase");
ABSL_FLAG(double, warmup_seconds, 1, "unmeasured warm-up before it");
ABSL_FLAG(int, threads, 1,
          "client threads (one connection each); farm: application threads per node");
ABSL_FLAG(int, server_threads, 4, "worker threads of the memcached server (-t)");
ABSL_FLAG(bool, memcached_binary, false, "memcached binary protocol instead of ASCII");
ABSL_FLAG(std::vector<std::string>, resp_addresses, {},
          "resp backend: host:port of every node of a running RESP cluster (farm_node --services=kv)");
ABSL_FLAG(uint64_t, seed, 1, "client thread t draws from seed + t");
ABSL_FLAG(std::string, json, "", "also write the reports as JSON to this file");
ABSL_FLAG(std::string, plot, "",
          "also plot throughput and READ p99 per workload and backend to this PNG (needs gnuplot)");
ABSL_FLAG(int, farm_nodes, 2, "farm: nodes of the local cluster");
ABSL_FLAG(int, farm_threads, 0, "farm: application threads per node (0: --threads)");
ABSL_FLAG(std::string, farm_fabric, "shm",
          "farm: fabric backend, shm, tcp or verbs (the first active RDMA device)");
ABSL_FLAG(int, farm_window, 16, "farm: operations in flight per application thread");
ABSL_FLAG(std::string, layout, "hopscotch",
          "farm, cluster: the kv table layout (hopscotch, linear, linear:R=8, chained, cuckoo; kv/table_layouts.h); "
          "cluster: the cluster's farm_node --kv_layout");
ABSL_FLAG(double, farm_occupancy, 0.9, "farm: bucket slots the loaded records fill (table size)");
ABSL_FLAG(int, farm_replication, 0, "farm: copies of each region (0: min(3, nodes))");
ABSL_FLAG(std::string, farm_log_sync, "off",
          "farm: the nodes' log (off, always, interval:MS, none; logged under /tmp/farm-ycsb-<pid>)");
ABSL_FLAG(int, farm_compute_nodes, 0,
          "farm: application threads only on this many more nodes, which hold no data (0: on "
          "every node)");
ABSL_FLAG(std::string, zookeeper, "",
          "cluster backend: ZooKeeper host:port of a running cluster (deploy/local-cluster status)");
ABSL_FLAG(std::string, cluster, "farm", "cluster backend: the cluster's name");
ABSL_FLAG(std::string, secret_file, "", "cluster backend: the cluster's secret file");
ABSL_FLAG(std::string, member_fabric, "auto",
          "cluster backend: the member's fabric, as the nodes' farm_node --fabric (auto: shm when "
          "every member is on this host)");
ABSL_FLAG(std::string, member_listen, "127.0.0.1:0",
          "cluster backend: the member's tcp fabric address, reachable by the nodes (with "
          "deploy/local-cluster --netns: the host's bridge address, e.g. 10.77.0.254:0)");
ABSL_FLAG(int, cluster_threads, 0, "cluster backend: application threads of the member (0: --threads)");
ABSL_FLAG(uint32_t, member_id, 0,
          "cluster backend: node id of the compute-only member the runner joins as (0: from the pid)");

namespace farm::ycsb {
namespace {

absl::StatusOr<WorkloadSpec> WorkloadFromFlags(const std::string& workload) {
  absl::StatusOr<WorkloadSpec> spec = PresetWorkload(workload);
  if (!spec.ok()) return spec.status();
  const std::string preset = absl::GetFlag(FLAGS_preset);
  if (preset == "farm") {
    ApplyFarmPreset(&*spec);
  } else if (!preset.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown --preset=", preset, " (farm)"));
  }
  if (const std::string d = absl::GetFlag(FLAGS_distribution); !d.empty()) {
    absl::StatusOr<RequestDistribution> parsed = ParseDistribution(d);
    if (!parsed.ok()) return parsed.status();
    spec->request_distribution = *parsed;
  }
  if (absl::GetFlag(FLAGS_records) >= 0) spec->record_count = absl::GetFlag(FLAGS_records);
  if (absl::GetFlag(FLAGS_field_count) >= 0) spec->field_count = absl::GetFlag(FLAGS_field_count);
  if (absl::GetFlag(FLAGS_field_length) >= 0)
    spec->field_length = absl::GetFlag(FLAGS_field_length);
  spec->operation_count = absl::GetFlag(FLAGS_operations);
  for (const std::string& p : absl::GetFlag(FLAGS_properties)) {
    const std::vector<std::string> nv = absl::StrSplit(p, absl::MaxSplits('=', 1));
    if (nv.size() != 2)
      return absl::InvalidArgumentError(
          absl::StrCat("--properties: \"", p, "\" is not name=value"));
    if (absl::Status s = SetProperty(&*spec, nv[0], nv[1]); !s.ok()) return s;
  }
  if (absl::Status s = spec->Validate(); !s.ok()) return s;
  return spec;
}

int Main() {
  std::vector<WorkloadSpec> specs;
  for (const std::string& workload : absl::GetFlag(FLAGS_workload)) {
    absl::StatusOr<WorkloadSpec> spec = WorkloadFromFlags(workload);
    if (!spec.ok()) {
      std::fprintf(stderr, "ycsb: %s\n", spec.status().ToString().c_str());
      return 2;
    }
    specs.push_back(*std::move(spec));
  }
  if (specs.empty()) {
    std::fprintf(stderr, "ycsb: --workload names no workload\n");
    return 2;
  }
  BackendRegistry registry;
  BaselineOptions baselines;
  baselines.memcached_binary_protocol = absl::GetFlag(FLAGS_memcached_binary);
  baselines.resp_addresses = absl::GetFlag(FLAGS_resp_addresses);
  if (absl::Status s = RegisterBaselineBackends(&registry, baselines); !s.ok()) {
    std::fprintf(stderr, "ycsb: %s\n", s.ToString().c_str());
    return 1;
  }
  FarmRunOptions farm;
  farm.nodes = absl::GetFlag(FLAGS_farm_nodes);
  farm.fabric = absl::GetFlag(FLAGS_farm_fabric);
  farm.window = absl::GetFlag(FLAGS_farm_window);
  farm.occupancy = absl::GetFlag(FLAGS_farm_occupancy);
  farm.replication = absl::GetFlag(FLAGS_farm_replication);
  farm.log_sync = absl::GetFlag(FLAGS_farm_log_sync);
  farm.compute_nodes = absl::GetFlag(FLAGS_farm_compute_nodes);
  farm.layout = absl::GetFlag(FLAGS_layout);
  FarmRunOptions exclusive = farm;
  exclusive.readable_commits = false;
  exclusive.name = "farm-exclusive";
  const int farm_threads = absl::GetFlag(FLAGS_farm_threads);
  for (const auto& [name, help, options] : {
           std::tuple<const char*, const char*, FarmRunOptions>{
               "farm", "the FaRM key-value store, application threads inside a local cluster", farm},
           {"farm-exclusive",
            "farm with FaRM's exclusive single-machine commits: lookups of a key being updated "
            "wait out the update's backup round trip (farm_node --readable_commits=false)",
            exclusive}}) {
    if (absl::Status s = registry.Register(name, help,
                                           [options, farm_threads](RunConfig c) {
                                             if (farm_threads > 0) c.threads = farm_threads;
                                             return RunFarmWorkload(c, options);
                                           });
        !s.ok()) {
      std::fprintf(stderr, "ycsb: %s\n", s.ToString().c_str());
      return 1;
    }
  }

  ClusterRunOptions cluster;
  cluster.member.zookeeper = absl::GetFlag(FLAGS_zookeeper);
  cluster.member.cluster = absl::GetFlag(FLAGS_cluster);
  cluster.member.secret_file = absl::GetFlag(FLAGS_secret_file);
  cluster.member.node_id = absl::GetFlag(FLAGS_member_id);
  cluster.member.listen = absl::GetFlag(FLAGS_member_listen);
  cluster.member.fabric = absl::GetFlag(FLAGS_member_fabric);
  cluster.window = absl::GetFlag(FLAGS_farm_window);
  cluster.layout = absl::GetFlag(FLAGS_layout);
  if (absl::Status s = registry.Register(
          "cluster",
          "the FaRM key-value store of a running cluster of node processes, application threads "
          "in a compute-only member that joins it (--zookeeper, --secret_file)",
          [cluster, threads = absl::GetFlag(FLAGS_cluster_threads)](RunConfig c) {
            if (threads > 0) c.threads = threads;
            return RunClusterWorkload(c, cluster);
          });
      !s.ok()) {
    std::fprintf(stderr, "ycsb: %s\n", s.ToString().c_str());
    return 1;
  }

  RunConfig config;
  config.threads = absl::GetFlag(FLAGS_threads);
  config.duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  config.warmup = absl::Seconds(absl::GetFlag(FLAGS_warmup_seconds));
  config.seed = absl::GetFlag(FLAGS_seed);
  config.server_threads = absl::GetFlag(FLAGS_server_threads);

  const std::vector<std::string> names = absl::GetFlag(FLAGS_backend);
  for (const std::string& name : names) {
    if (absl::StartsWith(name, "farm:") && registry.Find(name) == nullptr) {
      // farm:<layout>: the farm backend with that table layout (several in one run).
      FarmRunOptions with_layout = farm;
      with_layout.layout = name.substr(5);
      with_layout.name = name;
      if (absl::Status s = registry.Register(name, "farm with the layout named",
                                             [with_layout, farm_threads](RunConfig c) {
                                               if (farm_threads > 0) c.threads = farm_threads;
                                               return RunFarmWorkload(c, with_layout);
                                             });
          !s.ok()) {
        std::fprintf(stderr, "ycsb: %s\n", s.ToString().c_str());
        return 1;
      }
    }
    if (registry.Find(name) == nullptr) {
      std::fprintf(stderr, "ycsb: unknown backend \"%s\"; backends:\n%s", name.c_str(),
                   registry.Describe().c_str());
      return 2;
    }
  }
  std::vector<RunReport> reports;
  int failures = 0;
  for (const WorkloadSpec& spec : specs) {
    config.workload = spec;
    const size_t first = reports.size();
    for (const std::string& name : names) {
      absl::StatusOr<RunReport> report = (*registry.Find(name))(config);
      if (!report.ok()) {
        std::fprintf(stderr, "ycsb: %s: %s\n", name.c_str(), report.status().ToString().c_str());
        ++failures;
        continue;
      }
      std::printf("%s\n", FormatReport(*report).c_str());
      std::fflush(stdout);
      if (report->errors > 0) ++failures;
      reports.push_back(*std::move(report));
    }
    if (reports.size() - first > 1) {
      std::printf("%s", FormatComparison(absl::MakeConstSpan(reports).subspan(first)).c_str());
      std::fflush(stdout);
    }
  }
  if (specs.size() > 1 && !reports.empty()) std::printf("\n%s", FormatAcrossWorkloads(reports).c_str());
  if (const std::string path = absl::GetFlag(FLAGS_plot); !path.empty() && !reports.empty()) {
    if (absl::Status s = WritePlot(reports, path); !s.ok()) {
      std::fprintf(stderr, "ycsb: the plot: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    if (absl::Status s = WriteJsonFile(path, reports); !s.ok()) {
      std::fprintf(stderr, "ycsb: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace farm::ycsb

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv,
                         "YCSB workloads against key-value stores: ycsb --backend=memcached,redis --workload=c");
  return farm::ycsb::Main();
}
