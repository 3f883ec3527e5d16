// linkbench: the LinkBench driver (facebookarchive/linkbench reimplemented; README.md).
// Runs LinkBench's load phase then its request phase against each backend named by
// --backend, one after the other on a fresh store each, prints LinkBench's summary for
// each and a comparison, and writes everything as JSON (--json) and a latency chart
// (--plot, with gnuplot).
//
//   build/tools/linkbench/linkbench --backend=memory,mariadb --nodes=10000
//       --requesters=10 --requests=5000  (one command line)
//   linkbench --backend=mariadb --mysql_host=127.0.0.1 --mysql_user=me --mysql_password=...
//   linkbench --backend=memory --mix=tao --nodes=100000 --max_time=30
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "farm/base/command_line.h"
#include "tools/linkbench/backend_registry.h"
#include "tools/linkbench/distribution_data.h"
#include "tools/linkbench/loader.h"
#include "tools/linkbench/model.h"
#include "tools/linkbench/plot.h"
#include "tools/linkbench/properties.h"
#include "tools/linkbench/report.h"
#include "tools/linkbench/request_phase.h"
#include "tools/linkbench/workload.h"

#ifndef LINKBENCH_CONFIG_DIR
#define LINKBENCH_CONFIG_DIR "tools/linkbench/config"
#endif

ABSL_FLAG(std::vector<std::string>, backend, std::vector<std::string>{"memory"},
          "backends to run, in order (comma list): memory, mariadb, farm, graph-resp; the comparison is "
          "relative to the last");
ABSL_FLAG(std::string, workload, LINKBENCH_CONFIG_DIR "/FBWorkload.properties",
          "LinkBench workload properties file");
ABSL_FLAG(std::string, distribution, "",
          "Distribution.dat (default: the workload's data_file, relative to the workload file's parent "
          "directory, else beside it)");
ABSL_FLAG(std::vector<std::string>, properties, {}, "workload properties to override, key=value, comma-separated");
ABSL_FLAG(int64_t, nodes, 0, "nodes in the graph: maxid1 = startid1 + nodes (0: the workload's maxid1)");
ABSL_FLAG(std::string, mix, "linkbench", "request mix: linkbench (the workload file's) or tao (the TAO paper's)");
ABSL_FLAG(int, loaders, 10, "load phase: link loader threads (plus one node loader)");
ABSL_FLAG(int64_t, chunk_size, 2048, "load phase: id1s per chunk of work");
ABSL_FLAG(int, requesters, 100, "request phase: requester threads, one connection each");
ABSL_FLAG(int64_t, requests, 500000, "request phase: requests per requester");
ABSL_FLAG(int64_t, warmup_requests, 0,
          "request phase: requests per requester run first and measured nowhere (not LinkBench's: 0 measures "
          "from the first request)");
ABSL_FLAG(double, max_time, 100000, "request phase: seconds after which every requester stops");
ABSL_FLAG(int64_t, max_failed_requests, 0,
          "request phase: a requester stops after more failures than this (-1: never), as LinkBench");
ABSL_FLAG(int64_t, seed, 1, "load seed; the request phase uses seed + 1");
ABSL_FLAG(bool, progress, true, "show a progress line on stderr");
ABSL_FLAG(std::string, json, "", "also write every result as JSON to this file");
ABSL_FLAG(std::string, plot, "", "also draw per-operation p50/p99 latency per backend to this PNG (gnuplot)");
ABSL_FLAG(std::string, mysql_host, "", "mariadb: a running server's host (default: start a private mariadbd)");
ABSL_FLAG(int, mysql_port, 3306, "mariadb: the running server's port");
ABSL_FLAG(std::string, mysql_socket, "", "mariadb: a running server's unix socket");
ABSL_FLAG(std::string, mysql_user, "root", "mariadb: user on a running server");
ABSL_FLAG(std::string, mysql_password, "", "mariadb: password on a running server");
ABSL_FLAG(std::string, mysql_db, "linkdb", "mariadb: database (its LinkBench tables are dropped and recreated)");
ABSL_FLAG(std::string, mysql_buffer_pool, "1G", "mariadb: InnoDB buffer pool of the private server");
ABSL_FLAG(int, mysql_flush_log_at_trx_commit, 1,
          "mariadb: the private server's innodb_flush_log_at_trx_commit (1: flushed at commit, LinkBench's "
          "baseline; 2: written at commit, flushed each second, as farm_node --log_sync=interval:1000)");
ABSL_FLAG(std::string, mariadbd, "/usr/sbin/mariadbd", "mariadb: the server binary for a private server");
ABSL_FLAG(std::string, zookeeper, "",
          "farm: ZooKeeper host:port of a running cluster with the graph (deploy/local-cluster --services graph)");
ABSL_FLAG(std::string, cluster, "farm", "farm: the cluster's name");
ABSL_FLAG(std::string, secret_file, "", "farm: the cluster's secret file");
ABSL_FLAG(int, farm_threads, 2, "farm: worker threads of the compute-only member (connections round-robin)");
ABSL_FLAG(std::string, member_fabric, "auto", "farm: the member's fabric, as the nodes' farm_node --fabric");
ABSL_FLAG(std::string, member_listen, "127.0.0.1:0", "farm: the member's fabric address, reachable by the nodes");
ABSL_FLAG(std::string, graph_resp, "",
          "graph-resp: the nodes' graph RESP addresses, host:port comma list (farm_node --graph_listen)");
ABSL_FLAG(std::string, mariadb_install_db, "/usr/bin/mariadb-install-db",
          "mariadb: the datadir initialiser for a private server");

namespace farm::linkbench {
namespace {

std::string ResolveDistribution(const Properties& props, const std::string& workload_path) {
  if (!absl::GetFlag(FLAGS_distribution).empty()) return absl::GetFlag(FLAGS_distribution);
  const std::filesystem::path dir = std::filesystem::path(workload_path).parent_path();
  const std::string data_file = props.GetString("data_file").value_or("config/Distribution.dat");
  const std::filesystem::path p(data_file);
  if (p.is_absolute()) return data_file;
  // LinkBench resolves it against its home directory, the config directory's parent.
  for (const std::filesystem::path& candidate : {dir.parent_path() / p, dir / p, dir / p.filename()}) {
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return (dir / p.filename()).string();
}

absl::StatusOr<Workload> BuildWorkload(std::string& distribution_path) {
  const std::string path = absl::GetFlag(FLAGS_workload);
  absl::StatusOr<Properties> props = Properties::Load(path);
  if (!props.ok()) return props.status();
  for (const std::string& kv : absl::GetFlag(FLAGS_properties)) {
    std::vector<std::string> parts = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--properties: expected key=value, got \"", kv, "\""));
    }
    props->Set(parts[0], parts[1]);
  }
  if (const int64_t nodes = absl::GetFlag(FLAGS_nodes); nodes != 0) {
    if (nodes < 2) return absl::InvalidArgumentError("--nodes must be at least 2");
    absl::StatusOr<int64_t> start = props->GetInt("startid1", 1);
    if (!start.ok()) return start.status();
    props->Set("maxid1", absl::StrCat(*start + nodes));
  }
  distribution_path = ResolveDistribution(*props, path);
  absl::StatusOr<Workload> w = WorkloadFromProperties(*props);
  if (!w.ok()) return w.status();
  const std::string mix = absl::GetFlag(FLAGS_mix);
  if (mix == "tao") {
    ApplyTaoMix(*w);
  } else if (mix != "linkbench") {
    return absl::InvalidArgumentError(absl::StrCat("--mix must be linkbench or tao, not \"", mix, "\""));
  }
  return w;
}

int64_t HubLinks(const WorkloadModel& model) {
  const LinkCounts& c = model.counts();
  int64_t n = 0;
  for (int t = 0; t < c.link_type_count(); ++t) n += c.ForType(c.HubId(), c.LinkType(t));
  return n;
}

absl::Status CheckFlags() {
  if (absl::GetFlag(FLAGS_loaders) < 1) return absl::InvalidArgumentError("--loaders must be >= 1");
  if (absl::GetFlag(FLAGS_chunk_size) < 1) return absl::InvalidArgumentError("--chunk_size must be >= 1");
  if (absl::GetFlag(FLAGS_requesters) < 1) return absl::InvalidArgumentError("--requesters must be >= 1");
  if (absl::GetFlag(FLAGS_requests) < 0) return absl::InvalidArgumentError("--requests must be >= 0");
  if (absl::GetFlag(FLAGS_warmup_requests) < 0) return absl::InvalidArgumentError("--warmup_requests must be >= 0");
  if (absl::GetFlag(FLAGS_max_time) <= 0) return absl::InvalidArgumentError("--max_time must be > 0");
  if (absl::GetFlag(FLAGS_backend).empty()) return absl::InvalidArgumentError("--backend names no backend");
  return absl::OkStatus();
}

BackendOptions OptionsFromFlags() {
  BackendOptions o;
  o.settings["mysql_host"] = absl::GetFlag(FLAGS_mysql_host);
  o.settings["mysql_port"] = absl::StrCat(absl::GetFlag(FLAGS_mysql_port));
  o.settings["mysql_socket"] = absl::GetFlag(FLAGS_mysql_socket);
  o.settings["mysql_user"] = absl::GetFlag(FLAGS_mysql_user);
  o.settings["mysql_password"] = absl::GetFlag(FLAGS_mysql_password);
  o.settings["mysql_db"] = absl::GetFlag(FLAGS_mysql_db);
  o.settings["mysql_buffer_pool"] = absl::GetFlag(FLAGS_mysql_buffer_pool);
  o.settings["mysql_flush_log_at_trx_commit"] = absl::StrCat(absl::GetFlag(FLAGS_mysql_flush_log_at_trx_commit));
  o.settings["mariadbd"] = absl::GetFlag(FLAGS_mariadbd);
  o.settings["mariadb_install_db"] = absl::GetFlag(FLAGS_mariadb_install_db);
  o.settings["zookeeper"] = absl::GetFlag(FLAGS_zookeeper);
  o.settings["cluster"] = absl::GetFlag(FLAGS_cluster);
  o.settings["secret_file"] = absl::GetFlag(FLAGS_secret_file);
  o.settings["threads"] = absl::StrCat(absl::GetFlag(FLAGS_farm_threads));
  o.settings["fabric"] = absl::GetFlag(FLAGS_member_fabric);
  o.settings["listen"] = absl::GetFlag(FLAGS_member_listen);
  o.settings["graph_resp"] = absl::GetFlag(FLAGS_graph_resp);
  return o;
}

int Run() {
  if (absl::Status st = CheckFlags(); !st.ok()) {
    std::fprintf(stderr, "linkbench: %s\n", st.ToString().c_str());
    return 2;
  }
  std::string distribution_path;
  absl::StatusOr<Workload> workload = BuildWorkload(distribution_path);
  if (!workload.ok()) {
    std::fprintf(stderr, "linkbench: %s\n", workload.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<DistributionData> data = DistributionData::Load(distribution_path);
  if (!data.ok()) {
    std::fprintf(stderr, "linkbench: %s\n", data.status().ToString().c_str());
    return 2;
  }
  const WorkloadModel model(*workload, *std::move(data));
  const Workload& w = model.workload();

  RunSettings settings;
  settings.workload_file = absl::GetFlag(FLAGS_workload);
  settings.mix = w.mix_name;
  settings.startid1 = w.startid1;
  settings.maxid1 = w.maxid1;
  settings.loaders = absl::GetFlag(FLAGS_loaders);
  settings.requesters = absl::GetFlag(FLAGS_requesters);
  settings.requests_per_requester = absl::GetFlag(FLAGS_requests);
  settings.warmup_requests_per_requester = absl::GetFlag(FLAGS_warmup_requests);
  settings.max_time_s = absl::GetFlag(FLAGS_max_time);
  settings.expected_links = ExpectedLinks(model);
  std::printf("linkbench: workload %s (mix %s), ids [%lld, %lld): %lld nodes, %lld links expected "
              "(hub id %lld with %lld links)\n",
              settings.workload_file.c_str(), w.mix_name.c_str(), static_cast<long long>(w.startid1),
              static_cast<long long>(w.maxid1), static_cast<long long>(w.maxid1 - w.startid1),
              static_cast<long long>(settings.expected_links), static_cast<long long>(model.counts().HubId()),
              static_cast<long long>(HubLinks(model)));
  std::fflush(stdout);

  LoadOptions load;
  load.loaders = settings.loaders;
  load.chunk_size = absl::GetFlag(FLAGS_chunk_size);
  load.seed = absl::GetFlag(FLAGS_seed);
  load.progress = absl::GetFlag(FLAGS_progress);
  RequestOptions req;
  req.requesters = settings.requesters;
  req.requests = settings.requests_per_requester;
  req.warmup_requests = settings.warmup_requests_per_requester;
  req.max_time_s = settings.max_time_s;
  req.max_failed = absl::GetFlag(FLAGS_max_failed_requests);
  req.seed = absl::GetFlag(FLAGS_seed) + 1;
  req.progress = load.progress;

  int exit_code = 0;
  std::vector<RunRecord> runs;
  const BackendOptions options = OptionsFromFlags();
  for (const std::string& name : absl::GetFlag(FLAGS_backend)) {
    RunRecord run;
    run.backend = name;
    absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(name, options);
    if (!backend.ok()) {
      std::fprintf(stderr, "linkbench: backend %s: %s\n", name.c_str(), backend.status().ToString().c_str());
      exit_code = 1;
      continue;
    }
    run.description = (*backend)->Describe();
    std::printf("\n=== %s: %s\n", name.c_str(), run.description.c_str());
    std::fflush(stdout);
    absl::StatusOr<LoadResult> loaded = RunLoadPhase(**backend, model, load);
    if (!loaded.ok()) {
      std::fprintf(stderr, "linkbench: %s load phase failed: %s\n", name.c_str(), loaded.status().ToString().c_str());
      exit_code = 1;
      continue;
    }
    run.load = *loaded;
    std::printf("%s", LoadSummary(run).c_str());
    std::fflush(stdout);
    absl::StatusOr<RequestResult> requested = RunRequestPhase(**backend, model, req);
    if (!requested.ok()) {
      std::fprintf(stderr, "linkbench: %s request phase failed: %s\n", name.c_str(),
                   requested.status().ToString().c_str());
      exit_code = 1;
      continue;
    }
    run.requests = *std::move(requested);
    if (run.requests.errors > 0) exit_code = 1;
    std::printf("%s", RequestSummary(run).c_str());
    run.summary = (*backend)->Summary();
    for (const std::string& line : run.summary) std::printf("[%s] %s\n", name.c_str(), line.c_str());
    std::fflush(stdout);
    runs.push_back(std::move(run));
  }
  std::printf("%s", Comparison(runs).c_str());

  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    if (absl::Status st = WriteFile(path, ToJson(settings, runs)); !st.ok()) {
      std::fprintf(stderr, "linkbench: %s\n", st.ToString().c_str());
      exit_code = 1;
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_plot); !path.empty() && !runs.empty()) {
    if (absl::Status st = WritePlot(runs, path); !st.ok()) {
      std::fprintf(stderr, "linkbench: %s\n", st.ToString().c_str());
      exit_code = 1;
    } else {
      std::printf("plot written to %s\n", path.c_str());
    }
  }
  return exit_code;
}

}  // namespace
}  // namespace farm::linkbench

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv,
                         "linkbench: LinkBench's load and request phases against one or more graph stores.\n"
                         "  linkbench --backend=memory,mariadb --nodes=10000 --requesters=10 --requests=5000");
  return farm::linkbench::Run();
}
