#include "tools/kv_bench/op_loop.h"

#include <algorithm>
#include <utility>

namespace farm::kv::bench {

double LoopResult::QuantileUs(double q) {
  if (latency_ns.empty()) return 0;
  const size_t k = std::min(latency_ns.size() - 1, static_cast<size_t>(q * latency_ns.size()));
  std::nth_element(latency_ns.begin(), latency_ns.begin() + k, latency_ns.end());
  return latency_ns[k] / 1000.0;
}

void OpLoop::Start(Op op, int window, uint64_t count, std::chrono::steady_clock::time_point until, bool record_latency,
                   Finish finish) {
  auto* loop = new OpLoop(std::move(op), count, until, record_latency, std::move(finish));
  if (record_latency && count > 0) loop->result_.latency_ns.reserve(count);
  loop->in_flight_ = window;  // counted before any starts: see Completed
  for (int i = 0; i < window; ++i) loop->Issue();
}

void OpLoop::Issue() {
  const auto now = std::chrono::steady_clock::now();
  if (stopping_ || !error_.ok() || (count_ > 0 && issued_ >= count_) || now >= until_) {
    if (--in_flight_ > 0) return;
    result_.seconds = std::chrono::duration<double>(now - began_).count();
    Finish finish = std::move(finish_);
    absl::StatusOr<LoopResult> r = error_.ok() ? absl::StatusOr<LoopResult>(std::move(result_)) : error_;
    delete this;
    return finish(std::move(r));
  }
  const uint64_t i = issued_++;
  op_(i, [this, now](absl::Status s) { Completed(now, s); });
}

void OpLoop::Completed(std::chrono::steady_clock::time_point start, const absl::Status& s) {
  if (!s.ok() && error_.ok()) error_ = s;
  ++result_.ops;
  if (record_) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    result_.latency_ns.push_back(static_cast<uint32_t>(std::min<int64_t>(ns.count(), UINT32_MAX)));
  }
  Issue();
}

}  // namespace farm::kv::bench
