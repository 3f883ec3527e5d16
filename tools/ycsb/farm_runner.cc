#include "tools/ycsb/farm_runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/sync.h"
#include "farm/api/log.h"
#include "kv/local_kv_cluster.h"
#include "kv/table_layouts.h"
#include "tools/ycsb/farm_driver.h"
#include "tools/ycsb/progress.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

absl::Status Validate(const RunConfig& config, const FarmRunOptions& o) {
  if (config.threads < 1) return absl::InvalidArgumentError("at least one application thread per node");
  if (o.nodes < 1) return absl::InvalidArgumentError("at least one node");
  if (o.fabric != "shm" && o.fabric != "tcp" && o.fabric != "verbs") {
    return absl::InvalidArgumentError(absl::StrCat("fabric \"", o.fabric, "\": shm, tcp or verbs"));
  }
  if (o.compute_nodes < 0) return absl::InvalidArgumentError("compute nodes: 0 or more");
  if (o.replication < 0 || o.replication > o.nodes) {
    return absl::InvalidArgumentError(absl::StrCat("replication ", o.replication, " with ", o.nodes, " nodes"));
  }
  if (o.window < 1 || o.window > 1024) return absl::InvalidArgumentError("window: 1 to 1024 operations");
  if (absl::Status s = kv::ValidateLayout(o.layout); !s.ok()) return s;
  if (!(o.occupancy > 0 && o.occupancy <= 1)) return absl::InvalidArgumentError("occupancy: in (0, 1]");
  return absl::OkStatus();
}

// Blocks until every driver has decremented control.running, calling tick() every 20 ms.
template <typename Tick>
Clock::time_point WaitForDrivers(const DriverControl& control, Tick tick) {
  while (control.running.load(std::memory_order_acquire) > 0) {
    tick();
    absl::SleepFor(absl::Milliseconds(20));
  }
  return Clock::now();
}

// Runs op(client, finish) on the place's worker thread and waits for finish(result).
template <typename Result, typename Op>
Result RunAt(const DriverPlace& place, Op op) {
  auto result = std::make_shared<Result>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  kv::KvClient* client = place.client;
  place.host->context(place.thread).Post([client, op = std::move(op), result, done]() mutable {
    op(*client, [result, done](Result r) {
      *result = std::move(r);
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(120))) {
    return absl::DeadlineExceededError("a kv operation of the runner did not complete");
  }
  return std::move(*result);
}

// The platform's counters of the places' threads, summed.
struct PlatformCounters {
  LockFreeStats reads;
  CommitStats commits;
};

absl::StatusOr<PlatformCounters> SumCounters(const std::vector<DriverPlace>& places) {
  PlatformCounters sum;
  for (const DriverPlace& p : places) {
    Context* ctx = &p.host->context(p.thread);
    absl::StatusOr<PlatformCounters> c = RunAt<absl::StatusOr<PlatformCounters>>(
        p, [ctx](kv::KvClient&, auto finish) { finish(PlatformCounters{lockFreeStats(*ctx), commitStats(*ctx)}); });
    if (!c.ok()) return c.status();
    sum.reads.reads += c->reads.reads;
    sum.reads.retries += c->reads.retries;
    sum.commits.committed += c->commits.committed;
    sum.commits.failed += c->commits.failed;
    sum.commits.single_machine_served += c->commits.single_machine_served;
    sum.commits.exclusive += c->commits.exclusive;
  }
  return sum;
}

}  // namespace

absl::StatusOr<RunReport> RunFarmWorkload(const RunConfig& config, const FarmRunOptions& options) {
  if (absl::Status s = Validate(config, options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<CoreWorkload>> workload = CoreWorkload::Create(config.workload);
  if (!workload.ok()) return workload.status();
  const WorkloadSpec& spec = (*workload)->spec();
  const RecordFormat& format = (*workload)->format();

  kv::TableOptions table;
  table.layout.neighbourhood = options.neighbourhood;
  if (absl::Status s = table.layout.Validate(); !s.ok()) return s;
  const double slots_wanted = static_cast<double>(spec.record_count) / options.occupancy;
  table.buckets_per_node = std::max<uint64_t>(
      4, static_cast<uint64_t>(slots_wanted / (table.layout.slots_per_bucket() * options.nodes)) + 1);
  InProcessClusterOptions cluster;
  cluster.backend = options.fabric;
  cluster.nodes = options.nodes + options.compute_nodes;
  cluster.compute_only_nodes = options.compute_nodes;
  cluster.threads = static_cast<uint32_t>(config.threads);
  cluster.replication = options.replication > 0 ? options.replication : std::min(3, options.nodes);
  cluster.dir = absl::StrCat(options.dir, "-", ::getpid());
  cluster.log_sync = options.log_sync;
  cluster.readable_commits = options.readable_commits;
  // Regions are sparse: capacity costs only what is written. Room for every pair out of
  // line, on every replica, four times over.
  const uint64_t pair_bytes = format.max_key_bytes() + format.value_bytes() + 64;
  const uint64_t per_node = 4 * pair_bytes * static_cast<uint64_t>(spec.record_count) *
                            cluster.replication / static_cast<uint64_t>(options.nodes);
  cluster.region_bytes = 256u << 20;
  cluster.capacity_bytes = std::max<uint64_t>(2048u << 20, (per_node / cluster.region_bytes + 1) * cluster.region_bytes);
  absl::StatusOr<std::unique_ptr<kv::LocalKvCluster>> kv =
      kv::LocalKvCluster::Start(cluster, kv::KvTableOptions{options.layout, table});
  if (!kv.ok()) return kv.status();

  std::vector<DriverPlace> places;
  const NodeId first_app = options.compute_nodes > 0 ? options.nodes + 1 : 1;
  for (NodeId id = first_app; id <= static_cast<NodeId>(cluster.nodes); ++id) {
    for (uint32_t t = 0; t < cluster.threads; ++t) places.push_back({&(*kv)->host(id), t, &(*kv)->client(id, t)});
  }
  DriverRunOptions run;
  run.backend = options.name;
  run.window = options.window;
  FARM_LOG(kInfo, "ycsb: farm: table layout %s", options.layout);
  run.figures = {{"nodes", options.nodes},
                 {"compute_nodes", options.compute_nodes},
                 {"app_threads_per_node", config.threads}};
  run.exact_pair_count = true;
  // Chained: measure the table, not its migration (a load of 100,000 records doubles it
  // a few times; the expansions run on after the last insert).
  run.after_load = [kv = kv->get()] { return kv->WaitForExpansions(); };
  return RunDrivers(config, **workload, places, run);
}

absl::StatusOr<RunReport> RunDrivers(const RunConfig& config, CoreWorkload& workload_ref,
                                     const std::vector<DriverPlace>& places, const DriverRunOptions& options) {
  if (places.empty()) return absl::InvalidArgumentError("no application threads to run the drivers on");
  CoreWorkload* workload = &workload_ref;
  const WorkloadSpec& spec = workload->spec();
  const RecordFormat& format = workload->format();
  DriverControl control;
  std::vector<std::unique_ptr<FarmDriver>> drivers;
  for (const DriverPlace& p : places) {
    drivers.push_back(std::make_unique<FarmDriver>(*p.client, *workload, config.seed + drivers.size(),
                                                   options.window, &control));
  }
  const int total = static_cast<int>(drivers.size());
  // Runs fn(driver i) on driver i's worker thread.
  auto on_driver_threads = [&](auto& fn) {
    control.running.store(total, std::memory_order_relaxed);
    for (int i = 0; i < total; ++i) {
      places[i].host->context(places[i].thread).Post([&fn, d = drivers[i].get(), i] { fn(*d, i); });
    }
  };

  RunReport report;
  report.backend = options.backend;
  report.workload = spec.name;
  report.distribution = std::string(DistributionName(spec.request_distribution));
  report.threads = total;
  report.records = spec.record_count;
  report.key_bytes = format.max_key_bytes();
  report.value_bytes = format.value_bytes();
  for (const auto& [name, value] : options.figures) report.AddFigure(name, value);
  report.AddFigure("window", options.window);

  // Load.
  ProgressBar bar(absl::StrCat("load ", options.backend), spec.record_count, config.progress);
  const Clock::time_point load_start = Clock::now();
  auto load = [&](FarmDriver& d, int i) {
    d.Load(spec.insert_start + spec.record_count * i / total, spec.insert_start + spec.record_count * (i + 1) / total);
  };
  on_driver_threads(load);
  const Clock::time_point load_end =
      WaitForDrivers(control, [&] { bar.Update(control.loaded.load(std::memory_order_relaxed)); });
  bar.Finish(control.loaded.load());
  for (const auto& d : drivers) {
    if (!d->load_status().ok()) return d->load_status();
  }
  report.load_seconds = Seconds(load_end - load_start);
  report.load_throughput = spec.record_count / report.load_seconds;
  if (options.after_load) {
    if (absl::Status s = options.after_load(); !s.ok()) return s;
  }
  absl::StatusOr<kv::TableScan> scan = RunAt<absl::StatusOr<kv::TableScan>>(
      places[0], [](kv::KvClient& c, auto finish) { c.Scan(std::move(finish)); });
  if (!scan.ok()) return scan.status();
  // A table of its own holds exactly the records; a running cluster's may hold more.
  if (options.exact_pair_count ? scan->pairs != static_cast<uint64_t>(spec.record_count)
                               : scan->pairs < static_cast<uint64_t>(spec.record_count)) {
    return absl::InternalError(
        absl::StrCat("the table holds ", scan->pairs, " pairs after loading ", spec.record_count, " records"));
  }
  report.AddFigure("occupancy", scan->occupancy());
  report.AddFigure("space_utilisation", scan->utilisation());
  report.AddFigure("table_memory_mb", scan->memory_bytes / 1e6);
  report.AddFigure("overflow_blocks", static_cast<double>(scan->overflow_blocks));
  report.AddFigure("out_of_line_pairs", static_cast<double>(scan->out_of_line));

  // Transactions.
  absl::StatusOr<PlatformCounters> before = SumCounters(places);
  if (!before.ok()) return before.status();
  const bool by_count = spec.operation_count > 0;
  control.phase.store(by_count || config.warmup <= absl::ZeroDuration() ? DriverPhase::kMeasure
                                                                         : DriverPhase::kWarmup);
  const Clock::time_point run_start = Clock::now();
  Clock::time_point measure_start = run_start;
  Clock::time_point measure_end = run_start;
  const auto warmup = absl::ToChronoNanoseconds(config.warmup);
  const auto duration = absl::ToChronoNanoseconds(config.duration);
  auto run = [&](FarmDriver& d, int i) {
    d.Run(by_count ? spec.operation_count * (i + 1) / total - spec.operation_count * i / total : -1);
  };
  on_driver_threads(run);
  const Clock::time_point run_end = WaitForDrivers(control, [&] {
    if (by_count) return;
    const Clock::time_point now = Clock::now();
    if (control.phase.load() == DriverPhase::kWarmup && now - run_start >= warmup) {
      measure_start = now;
      control.phase.store(DriverPhase::kMeasure);
    } else if (control.phase.load() == DriverPhase::kMeasure && now - measure_start >= duration) {
      measure_end = now;
      control.phase.store(DriverPhase::kStop);
    }
  });
  if (by_count) measure_end = run_end;
  report.seconds = Seconds(measure_end - measure_start);
  OpStats all;
  for (const auto& d : drivers) all.Merge(d->stats());
  report.SetOpStats(all);
  absl::StatusOr<PlatformCounters> after = SumCounters(places);
  if (!after.ok()) return after.status();
  // Over the run (and its warm-up): lock-free reads that met a locked or torn copy and
  // read again; the commits these threads served that kept their locks exclusive (their
  // writes' lookups waited) and the transactions they ran that failed.
  if (const uint64_t reads = after->reads.reads - before->reads.reads; reads > 0) {
    report.AddFigure("read_retries_per_read",
                     static_cast<double>(after->reads.retries - before->reads.retries) / reads);
  }
  if (const uint64_t served = after->commits.single_machine_served - before->commits.single_machine_served;
      served > 0) {
    report.AddFigure("exclusive_commit_share",
                     static_cast<double>(after->commits.exclusive - before->commits.exclusive) / served);
  }
  // Single-machine commits served per second over the run (warm-up included): against
  // the UPDATE rate, how many updates one commit carries (the primaries' combining).
  if (const double seconds = Seconds(run_end - run_start); seconds > 0) {
    report.AddFigure("served_commits_per_s",
                     static_cast<double>(after->commits.single_machine_served -
                                         before->commits.single_machine_served) / seconds);
  }
  if (const uint64_t ended = after->commits.committed + after->commits.failed - before->commits.committed -
                             before->commits.failed;
      ended > 0) {
    report.AddFigure("failed_commit_share",
                     static_cast<double>(after->commits.failed - before->commits.failed) / ended);
  }

  kv::LookupStats lookups;
  for (const DriverPlace& p : places) {
    absl::StatusOr<kv::LookupStats> s = RunAt<absl::StatusOr<kv::LookupStats>>(
        p, [](kv::KvClient& c, auto finish) { finish(c.lookup_stats()); });
    if (!s.ok()) return s.status();
    lookups.lookups += s->lookups;
    lookups.reads += s->reads;
    lookups.bytes_read += s->bytes_read;
    lookups.restarts += s->restarts;
  }
  if (lookups.lookups > 0) {
    const double n = static_cast<double>(lookups.lookups);
    report.AddFigure("reads_per_lookup", lookups.reads / n);
    report.AddFigure("bytes_per_lookup", lookups.bytes_read / n);
    report.AddFigure("restarts_per_lookup", lookups.restarts / n);
  }
  drivers.clear();  // nothing in flight: every driver retired
  return report;
}

}  // namespace farm::ycsb
