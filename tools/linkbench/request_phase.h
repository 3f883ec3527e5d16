// The request phase, as LinkBenchDriver + LinkBenchRequest: `requesters` threads, each
// with its own Connection and Requester (JavaRandom seeded from one master
// JavaRandom(seed)), unthrottled, each stopping after `requests` requests or
// `max_time_s`, whichever comes first. With `warmup_requests` (not LinkBench's: it
// measures from the first request) each requester first runs that many requests that
// count nowhere; the measured requests start together once every requester is warm,
// after Backend::StartMeasuring. As LinkBench (max_failed_requests = 0 by
// default), a requester stops at its first failed request beyond `max_failed`; the
// phase still reports what was measured, with the first error.
#ifndef FARM_TOOLS_LINKBENCH_REQUEST_PHASE_H_
#define FARM_TOOLS_LINKBENCH_REQUEST_PHASE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tools/linkbench/backend.h"
#include "tools/linkbench/model.h"
#include "tools/linkbench/op_stats.h"

namespace farm::linkbench {

struct RequestOptions {
  int requesters = 100;
  int64_t requests = 500000;  // per requester
  int64_t warmup_requests = 0;  // per requester, before the measured ones
  double max_time_s = 3600;
  int64_t max_failed = 0;  // per requester; < 0: unlimited
  int64_t seed = 2;
  bool progress = true;
};

struct RequestResult {
  std::unique_ptr<OpStats> stats;  // all requesters merged
  uint64_t requests = 0;           // successful + failed
  uint64_t errors = 0;
  int aborted_requesters = 0;
  std::string first_error;  // empty when none (a warm-up failure included)
  double seconds = 0;       // of the measured requests
  double OpsPerSecond() const { return seconds > 0 ? requests / seconds : 0; }
};

// Errors only when a connection cannot be made; failed requests are in the result.
absl::StatusOr<RequestResult> RunRequestPhase(Backend& backend, const WorkloadModel& model,
                                              const RequestOptions& options);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_REQUEST_PHASE_H_
