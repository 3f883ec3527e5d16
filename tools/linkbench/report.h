// Reports of a run: LinkBench-style text (the load summary, one line per operation
// with count, p25/p50/p75/p95/p99, max and mean latency in ms, the requests/second
// line), a comparison of several backends (ratios against the last one), and JSON
// with everything. Pure functions of the records.
#ifndef FARM_TOOLS_LINKBENCH_REPORT_H_
#define FARM_TOOLS_LINKBENCH_REPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/linkbench/loader.h"
#include "tools/linkbench/request_phase.h"

namespace farm::linkbench {

struct RunRecord {
  std::string backend;      // the registry name
  std::string description;  // Backend::Describe()
  LoadResult load;
  RequestResult requests;
  std::vector<std::string> summary;  // Backend::Summary() after the request phase
};

// Settings echoed into reports.
struct RunSettings {
  std::string workload_file;
  std::string mix;
  int64_t startid1 = 1, maxid1 = 0;
  int loaders = 0, requesters = 0;
  int64_t requests_per_requester = 0;
  int64_t warmup_requests_per_requester = 0;
  double max_time_s = 0;
  int64_t expected_links = 0;
};

std::string LoadSummary(const RunRecord& run);
std::string RequestSummary(const RunRecord& run);
// Empty for fewer than two runs.
std::string Comparison(const std::vector<RunRecord>& runs);
std::string ToJson(const RunSettings& settings, const std::vector<RunRecord>& runs);
absl::Status WriteFile(const std::string& path, const std::string& contents);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_REPORT_H_
