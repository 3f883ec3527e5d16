// Helpers of the raw facet's tests (one_sided_test.cc, one_sided_recovery_test.cc):
// running an operation or a task on a node's worker thread and carrying its result to
// the test's thread.
#ifndef FARM_TESTS_API_ONE_SIDED_TEST_UTIL_H_
#define FARM_TESTS_API_ONE_SIDED_TEST_UTIL_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/node/node.h"
#include "tests/support/node_cluster.h"

namespace farm::one_sided_test {

// Results handed from a worker thread to the test's thread. Debian's Abseil counts an
// error Status's shared storage in code ThreadSanitizer does not see
// (tests/tsan_suppressions.txt), so a Status whose storage the worker still shares
// would look like a race when the worker drops its copy: errors cross as a code and a
// message of their own.
inline absl::Status Detached(const absl::Status& s) {
  return s.ok() ? absl::OkStatus() : absl::Status(s.code(), std::string(s.message()));
}

struct CarriedStatus {
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;
  explicit CarriedStatus(const absl::Status& s) : code(s.code()), message(s.message()) {}
  absl::Status Get() const { return code == absl::StatusCode::kOk ? absl::OkStatus() : absl::Status(code, message); }
};
template <typename T>
struct Carrier;
template <>
struct Carrier<absl::Status> {
  CarriedStatus status;
  Carrier(const absl::Status& s) : status(s) {}  // NOLINT: testing::RunInContext makes one of a Status
  absl::Status Get() const { return status.Get(); }
};
template <typename V>
struct Carrier<absl::StatusOr<V>> {
  CarriedStatus status;
  V value{};  // when status is OK
  Carrier(const absl::Status& s) : status(s) {}  // NOLINT: as above
  explicit Carrier(const absl::StatusOr<V>& r) : status(r.status()) {
    if (r.ok()) value = *r;
  }
  absl::StatusOr<V> Get() const {
    if (status.code == absl::StatusCode::kOk) return value;
    return status.Get();
  }
};

// testing::RunInContext, the result carried across as above.
template <typename T, typename Op>
T RunInContext(node::Node& n, Op op, size_t t = 0) {
  return testing::RunInContext<Carrier<T>>(
             n,
             [op](auto& ctx, auto finish) mutable {
               op(ctx, [finish](T r) mutable { finish(Carrier<T>(r)); });
             },
             t)
      .Get();
}

template <typename T, typename Make>
T RunTask(node::Node& n, Make make, size_t t = 0) {
  return RunInContext<T>(
      n, [make](Context& ctx, auto finish) { Spawn(make(ctx), std::move(finish)); }, t);
}

}  // namespace farm::one_sided_test

#endif  // FARM_TESTS_API_ONE_SIDED_TEST_UTIL_H_
