// OpLoop: kv_bench's driver on one worker thread: runs operations op(i, done), `window`
// in flight, until `count` have completed or `until` has passed, and records each
// one's latency when asked. Deletes itself when done and calls `finish` with the
// first error or the figures.
#ifndef FARM_TOOLS_KV_BENCH_OP_LOOP_H_
#define FARM_TOOLS_KV_BENCH_OP_LOOP_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"

namespace farm::kv::bench {

struct LoopResult {
  uint64_t ops = 0;
  double seconds = 0;
  std::vector<uint32_t> latency_ns;  // per op, when recorded
  double per_second() const { return seconds > 0 ? ops / seconds : 0; }
  // The q-quantile of the recorded latencies, in microseconds (sorts them).
  double QuantileUs(double q);
};

class OpLoop {
 public:
  using Op = std::function<void(uint64_t i, absl::AnyInvocable<void(absl::Status)> done)>;
  using Finish = absl::AnyInvocable<void(absl::StatusOr<LoopResult>)>;

  // Starts the loop on the calling (worker) thread. `count` 0: no limit but `until`.
  static void Start(Op op, int window, uint64_t count, std::chrono::steady_clock::time_point until,
                    bool record_latency, Finish finish);

 private:
  OpLoop(Op op, uint64_t count, std::chrono::steady_clock::time_point until, bool record, Finish finish)
      : op_(std::move(op)), count_(count), until_(until), record_(record), finish_(std::move(finish)) {}
  void Issue();
  void Completed(std::chrono::steady_clock::time_point start, const absl::Status& s);

  Op op_;
  const uint64_t count_;
  const std::chrono::steady_clock::time_point until_;
  const bool record_;
  Finish finish_;
  std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();
  uint64_t issued_ = 0;
  int in_flight_ = 0;
  bool stopping_ = false;
  absl::Status error_;
  LoopResult result_;
};

}  // namespace farm::kv::bench

#endif  // FARM_TOOLS_KV_BENCH_OP_LOOP_H_
