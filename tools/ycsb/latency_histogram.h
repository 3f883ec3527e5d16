// LatencyHistogram: a log-linear histogram of latencies in nanoseconds, after
// HdrHistogram: values below 32 ns each have a bucket; above, every power of two is
// split into 32 equal buckets, so a reported percentile is within 1/32 (3.1%) above the
// true value. Sum, min and max are exact. Range: up to 2^44 ns (~4.9 hours); larger
// values count in the top bucket.
//
// One per thread (and per operation type): Record is a few instructions and takes no
// lock. Merge() adds another histogram's counts, so per-thread histograms combine into
// a run's after the threads have stopped. Not thread-safe. About 10 KiB.
#ifndef FARM_TOOLS_YCSB_LATENCY_HISTOGRAM_H_
#define FARM_TOOLS_YCSB_LATENCY_HISTOGRAM_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace farm::ycsb {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 5;
  static constexpr uint64_t kSubBuckets = 1u << kSubBucketBits;  // 32
  static constexpr int kMaxBits = 44;                            // values < 2^44 ns
  static constexpr size_t kBuckets = kSubBuckets * (kMaxBits - kSubBucketBits + 1);

  void Record(uint64_t ns) {
    ++counts_[BucketOf(ns)];
    ++count_;
    sum_ += ns;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
  }
  void Merge(const LatencyHistogram& other);
  void Clear() { *this = LatencyHistogram(); }

  uint64_t count() const { return count_; }
  // 0 when empty.
  uint64_t MinNs() const { return count_ == 0 ? 0 : min_; }
  uint64_t MaxNs() const { return max_; }
  double MeanNs() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }
  // The smallest bucket bound v such that at least p% of the values are <= v, capped
  // at MaxNs(); p in [0, 100]. 0 when empty.
  uint64_t PercentileNs(double p) const;

  // Bucket arithmetic, public for tests: values in [BucketLow(i), BucketHigh(i)] land
  // in bucket i.
  static size_t BucketOf(uint64_t ns) {
    if (ns < kSubBuckets) return static_cast<size_t>(ns);
    if (ns >= (uint64_t{1} << kMaxBits)) return kBuckets - 1;
    const int msb = 63 - std::countl_zero(ns);  // >= kSubBucketBits
    const int shift = msb - kSubBucketBits;
    return static_cast<size_t>(kSubBuckets * (shift + 1) + ((ns >> shift) - kSubBuckets));
  }
  static uint64_t BucketLow(size_t i) {
    if (i < kSubBuckets) return i;
    const int shift = static_cast<int>(i / kSubBuckets) - 1;
    return (kSubBuckets + i % kSubBuckets) << shift;
  }
  static uint64_t BucketHigh(size_t i) {
    if (i < kSubBuckets) return i;
    const int shift = static_cast<int>(i / kSubBuckets) - 1;
    return BucketLow(i) + (uint64_t{1} << shift) - 1;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_LATENCY_HISTOGRAM_H_
