// Helpers for fabric and messaging tests: options with unique addresses, waiting for
// completions, and a text form of capabilities to pass between processes.
#ifndef FARM_TESTS_SUPPORT_FABRIC_TEST_UTIL_H_
#define FARM_TESTS_SUPPORT_FABRIC_TEST_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/fabric/fabric.h"

namespace farm::testing {

inline constexpr char kTestSecret[] = "farm-test-cluster-secret-0123456789";

// Options for a fresh fabric of `backend` ("shm" or "tcp") on a unique local address.
FabricOptions TestFabricOptions(const std::string& backend);

// Polls until one completion arrives. DeadlineExceeded after `timeout`.
absl::StatusOr<Completion> WaitForCompletion(CompletionQueue& cq,
                                             absl::Duration timeout = absl::Seconds(10));

// Multiplier for stress-test iteration counts: FARM_STRESS_SCALE in the environment
// (e.g. 0.1 under sanitizers, 10 for soaks); 1 by default.
double StressScale();
inline uint64_t Scaled(uint64_t n) {
  const double v = static_cast<double>(n) * StressScale();
  return v < 1 ? 1 : static_cast<uint64_t>(v);
}

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_FABRIC_TEST_UTIL_H_
