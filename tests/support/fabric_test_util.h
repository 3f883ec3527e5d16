// Helpers for fabric and messaging tests: options with unique addresses, waiting for
// completions, and a text form of capabilities to pass between processes.
#ifndef FARM_TESTS_SUPPORT_FABRIC_TEST_UTIL_H_
#define FARM_TESTS_SUPPORT_FABRIC_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/fabric/fabric.h"

namespace farm::testing {

inline constexpr char kTestSecret[] = "farm-test-cluster-secret-0123456789";

// The backends the parameterised fabric, messaging and higher suites run on:
// FARM_TEST_FABRICS in the environment ("verbs", "shm,tcp", ...), else shm and tcp.
// The Soft-RoCE harness (tests/softroce) sets it to verbs inside its guest; that one
// variable is how any suite runs on verbs.
std::vector<std::string> TestBackends();

// RDMA devices the verbs tests spread their fabrics over: FARM_TEST_VERBS_DEVICES
// ("rxe0 rxe1"); empty means each fabric takes the first active device.
std::vector<std::string> TestVerbsDevices();

// Options for a fresh fabric of `backend` ("shm", "tcp" or "verbs") on a unique local
// address. verbs fabrics take the test devices in turn, offset by the process id, so
// that two fabrics of one process (and, usually, of a parent and its child) sit on
// different devices and their traffic crosses the (virtual) wire.
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
