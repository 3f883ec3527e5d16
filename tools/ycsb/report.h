// RunReport: the result of one backend's run of a workload, as every runner (the
// synchronous baselines here, FaRM's event-driven one) fills it, printed as a table or
// written as JSON. Backends add their own figures (reads per lookup, occupancy, ...)
// as named numbers.
#ifndef FARM_TOOLS_YCSB_REPORT_H_
#define FARM_TOOLS_YCSB_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "tools/ycsb/latency_histogram.h"
#include "tools/ycsb/op_stats.h"
#include "tools/ycsb/op_type.h"

namespace farm::ycsb {

// Latency percentiles in microseconds.
struct LatencySummary {
  uint64_t count = 0;
  double mean_us = 0, p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};
LatencySummary Summarize(const LatencyHistogram& h);

struct OpTypeReport {
  OpType type = OpType::kRead;
  uint64_t ops = 0;        // completed (see op_stats.h)
  uint64_t errors = 0;     // failed
  uint64_t not_found = 0;  // completed without finding (all) their records
  LatencySummary latency;
};

// A backend-specific figure: "reads_per_lookup", "occupancy", "space_utilisation", ...
struct Figure {
  std::string name;
  double value = 0;
};

struct RunReport {
  std::string backend;       // "memcached", "redis", "farm", ...
  std::string workload;      // WorkloadSpec::name: "a", "c+farm", ...
  std::string distribution;  // request distribution
  int threads = 0;           // client threads (or application threads)
  int64_t records = 0;       // loaded
  size_t key_bytes = 0;      // largest key
  size_t value_bytes = 0;

  // Load phase: inserts of the records.
  double load_seconds = 0;
  double load_throughput = 0;  // inserts per second

  // Transaction phase, warm-up excluded.
  uint64_t ops = 0;  // completed operations, all types
  uint64_t errors = 0;
  double seconds = 0;
  double throughput = 0;             // completed operations per second
  LatencySummary latency;            // all types together
  std::vector<OpTypeReport> per_op;  // the types that ran, in OpType order
  std::string first_error;           // "" when errors == 0

  std::vector<Figure> figures;

  void AddFigure(std::string name, double value) { figures.push_back({std::move(name), value}); }
  // Fills ops, errors, latency, per_op, first_error from `stats` and throughput from
  // ops / seconds (set seconds first).
  void SetOpStats(const OpStats& stats);
};

// A readable table of one run.
std::string FormatReport(const RunReport& r);
// Several runs of the same workload side by side: throughput, its ratio to the first
// run's, and per operation type p50 / p99.
std::string FormatComparison(absl::Span<const RunReport> runs);
// The same backends over several workloads (one invocation, e.g. --workload=c,b): per
// backend and workload, throughput and READ p50 / p99, and the READ p99 relative to the
// backend's run of the first workload (the "lookup p99 under updates" figure).
// Runs are matched by backend name; a backend missing from the first workload gets "-".
std::string FormatAcrossWorkloads(absl::Span<const RunReport> runs);
// {"runs": [ {...}, ... ]}, every field of every run.
std::string ReportsToJson(absl::Span<const RunReport> runs);
// ReportsToJson to a file (replaced).
absl::Status WriteJsonFile(const std::string& path, absl::Span<const RunReport> runs);

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_REPORT_H_
