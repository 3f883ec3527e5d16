#include "tools/ycsb/sync_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/ycsb/op_generator.h"
#include "tools/ycsb/progress.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {
namespace {

using Clock = std::chrono::steady_clock;

enum class Phase : int { kWarmup, kMeasure, kStop };

// One client thread's connection, generator, buffers and measurements. Used by one
// thread at a time (created on the caller's, then run on its own).
class ClientThread {
 public:
  ClientThread(std::unique_ptr<SyncKvClient> client, CoreWorkload& workload, uint64_t seed)
      : client_(std::move(client)),
        gen_(workload, seed),
        key_(gen_.format().max_key_bytes()),
        value_(gen_.format().value_bytes()),
        batch_(static_cast<size_t>(workload.spec().max_scan_length),
               gen_.format().max_key_bytes()) {}

  SyncKvClient& client() { return *client_; }
  const OpStats& stats() const { return stats_; }

  // Inserts records [begin, end), adding one to *loaded per insert. Stops at the first
  // failure.
  absl::Status Load(int64_t begin, int64_t end, std::atomic<int64_t>* loaded) {
    for (int64_t k = begin; k < end; ++k) {
      absl::Status s =
          client_->Insert(gen_.Key(k, absl::MakeSpan(key_)), gen_.Value(k, absl::MakeSpan(value_)));
      if (!s.ok())
        return absl::Status(s.code(),
                            absl::StrCat("load: insert of record ", k, ": ", s.message()));
      loaded->fetch_add(1, std::memory_order_relaxed);
    }
    return absl::OkStatus();
  }

  // Runs operations until *phase is kStop or `max_ops` (> 0) have run; measures those
  // started in kMeasure.
  void Run(const std::atomic<Phase>* phase, int64_t max_ops) {
    for (int64_t n = 0; max_ops == 0 || n < max_ops; ++n) {
      const Phase p = phase->load(std::memory_order_relaxed);
      if (p == Phase::kStop) break;
      const Op op = gen_.Next();
      const Clock::time_point start = Clock::now();
      const Outcome outcome = Execute(op);
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
      if (p != Phase::kMeasure) continue;
      if (!outcome.error.ok()) {
        stats_.RecordError(op.type, outcome.error.ToString());
        continue;
      }
      stats_.Record(op.type, static_cast<uint64_t>(ns.count()));
      if (outcome.not_found) stats_.RecordNotFound(op.type);
    }
  }

 private:
  struct Outcome {
    absl::Status error;
    bool not_found = false;
  };

  Outcome Execute(const Op& op) {
    const absl::string_view key = gen_.Key(op.keynum, absl::MakeSpan(key_));
    switch (op.type) {
      case OpType::kRead:
        return Read(op.keynum, key);
      case OpType::kUpdate:
        return {client_->Update(key, gen_.Value(op.keynum, absl::MakeSpan(value_)))};
      case OpType::kInsert: {
        Outcome o{client_->Insert(key, gen_.Value(op.keynum, absl::MakeSpan(value_)))};
        // Acknowledged whatever the outcome, as YCSB does, so Last() moves on.
        if (absl::Status ack = gen_.AcknowledgeInsert(op); o.error.ok()) o.error = ack;
        return o;
      }
      case OpType::kScan:
        return Scan(op);
      case OpType::kReadModifyWrite: {
        Outcome o = Read(op.keynum, key);
        if (!o.error.ok()) return o;
        o.error = client_->Update(key, gen_.Value(op.keynum, absl::MakeSpan(value_)));
        return o;
      }
    }
    return {absl::InternalError("unknown operation type")};
  }

  Outcome Read(int64_t keynum, absl::string_view key) {
    absl::Status s = client_->Get(key, &read_value_);
    if (absl::IsNotFound(s)) return {absl::OkStatus(), true};
    if (s.ok() && !gen_.format().ValueBelongsTo(keynum, read_value_)) {
      s = absl::DataLossError(
          absl::StrCat("read of record ", keynum, ": the value is not the record's"));
    }
    return {s};
  }

  Outcome Scan(const Op& op) {
    gen_.ScanKeys(op, &batch_);
    int64_t wrong = -1;
    absl::StatusOr<size_t> found = client_->MultiGet(batch_, [&](size_t i, absl::string_view v) {
      if (!gen_.format().ValueBelongsTo(op.keynum + static_cast<int64_t>(i), v))
        wrong = op.keynum + i;
    });
    if (!found.ok()) return {found.status()};
    if (wrong >= 0) {
      return {absl::DataLossError(
          absl::StrCat("scan: the value of record ", wrong, " is not the record's"))};
    }
    return {absl::OkStatus(), *found < batch_.size()};
  }

  std::unique_ptr<SyncKvClient> client_;
  OpGenerator gen_;
  std::vector<char> key_;
  std::vector<char> value_;
  std::string read_value_;
  KeyBatch batch_;
  OpStats stats_;
};

// Runs body(t) on one thread per client and waits for all of them; returns when the
// last one finished. While they run, the calling thread calls tick() every 20 ms.
template <typename Body, typename Tick>
Clock::time_point RunOnThreads(int threads, Body body, Tick tick) {
  std::atomic<int> running{threads};
  std::vector<Clock::time_point> finished(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      body(t);
      finished[t] = Clock::now();
      running.fetch_sub(1, std::memory_order_release);
    });
  }
  while (running.load(std::memory_order_acquire) > 0) {
    tick();
    absl::SleepFor(absl::Milliseconds(20));
  }
  for (std::thread& th : pool) th.join();
  return *std::max_element(finished.begin(), finished.end());
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

absl::StatusOr<RunReport> RunSyncWorkload(const RunConfig& config, absl::string_view backend,
                                          const ClientFactory& connect) {
  if (config.threads < 1) return absl::InvalidArgumentError("at least one client thread");
  absl::StatusOr<std::unique_ptr<CoreWorkload>> workload = CoreWorkload::Create(config.workload);
  if (!workload.ok()) return workload.status();
  const WorkloadSpec& spec = (*workload)->spec();
  std::vector<std::unique_ptr<ClientThread>> clients;
  for (int t = 0; t < config.threads; ++t) {
    absl::StatusOr<std::unique_ptr<SyncKvClient>> c = connect();
    if (!c.ok()) return c.status();
    clients.push_back(std::make_unique<ClientThread>(*std::move(c), **workload, config.seed + t));
  }
  RunReport report;
  report.backend = std::string(backend);
  report.workload = spec.name;
  report.distribution = std::string(DistributionName(spec.request_distribution));
  report.threads = config.threads;
  report.records = spec.record_count;
  report.key_bytes = (*workload)->format().max_key_bytes();
  report.value_bytes = (*workload)->format().value_bytes();
  const absl::StatusOr<ServerStats> before = clients[0]->client().Stats();

  // Load.
  std::atomic<int64_t> loaded{0};
  std::vector<absl::Status> load_status(config.threads);
  ProgressBar bar(absl::StrCat("load ", backend), spec.record_count, config.progress);
  const Clock::time_point load_start = Clock::now();
  const Clock::time_point load_end = RunOnThreads(
      config.threads,
      [&](int t) {
        const int64_t begin = spec.insert_start + spec.record_count * t / config.threads;
        const int64_t end = spec.insert_start + spec.record_count * (t + 1) / config.threads;
        load_status[t] = clients[t]->Load(begin, end, &loaded);
      },
      [&] { bar.Update(loaded.load(std::memory_order_relaxed)); });
  report.load_seconds = Seconds(load_end - load_start);
  bar.Finish(loaded.load());
  for (const absl::Status& s : load_status) {
    if (!s.ok()) return s;
  }
  report.load_throughput = spec.record_count / report.load_seconds;
  const absl::StatusOr<ServerStats> after_load = clients[0]->client().Stats();
  if (before.ok() && after_load.ok()) {
    if (after_load->items - before->items != static_cast<uint64_t>(spec.record_count)) {
      return absl::InternalError(absl::StrCat(backend, " holds ", after_load->items - before->items,
                                              " new pairs after loading ", spec.record_count,
                                              " records"));
    }
    report.AddFigure("server_memory_mb", after_load->memory_bytes / 1e6);
    if (after_load->memory_bytes > before->memory_bytes) {
      report.AddFigure("space_utilisation",
                       static_cast<double>(spec.record_count) *
                           (report.key_bytes + report.value_bytes) /
                           static_cast<double>(after_load->memory_bytes - before->memory_bytes));
    }
  }

  // Transactions.
  const bool by_count = spec.operation_count > 0;
  std::atomic<Phase> phase{by_count || config.warmup <= absl::ZeroDuration() ? Phase::kMeasure
                                                                             : Phase::kWarmup};
  const Clock::time_point run_start = Clock::now();
  Clock::time_point measure_start = run_start;
  Clock::time_point measure_end = run_start;
  const auto warmup = absl::ToChronoNanoseconds(config.warmup);
  const auto duration = absl::ToChronoNanoseconds(config.duration);
  const Clock::time_point run_end = RunOnThreads(
      config.threads,
      [&](int t) {
        const int64_t quota = by_count ? spec.operation_count * (t + 1) / config.threads -
                                             spec.operation_count * t / config.threads
                                       : 0;
        if (by_count && quota == 0) return;
        clients[t]->Run(&phase, quota);
      },
      [&] {
        if (by_count) return;
        const Clock::time_point now = Clock::now();
        if (phase.load() == Phase::kWarmup && now - run_start >= warmup) {
          measure_start = now;
          phase.store(Phase::kMeasure);
        } else if (phase.load() == Phase::kMeasure && now - measure_start >= duration) {
          measure_end = now;
          phase.store(Phase::kStop);
        }
      });
  if (by_count) measure_end = run_end;
  report.seconds = Seconds(measure_end - measure_start);
  OpStats all;
  for (const auto& c : clients) all.Merge(c->stats());
  report.SetOpStats(all);
  if (absl::StatusOr<ServerStats> end = clients[0]->client().Stats(); end.ok()) {
    report.AddFigure("server_items", static_cast<double>(end->items));
  }
  return report;
}

}  // namespace farm::ycsb
