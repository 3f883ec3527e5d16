// RunProcess: runs a program to completion with the given stdin, capturing its stdout
// and stderr (for tests that drive redis-cli and redis-benchmark).
#ifndef FARM_TESTS_KV_RESP_RUN_PROCESS_H_
#define FARM_TESTS_KV_RESP_RUN_PROCESS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace farm::kv::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

// argv[0] is a path. DeadlineExceeded (after killing it) when it runs past `timeout`.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const std::string& input = "",
                                         absl::Duration timeout = absl::Seconds(20));

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_RESP_RUN_PROCESS_H_
