// LatencySamples: collects per-operation latencies and reports percentiles.
#ifndef FARM_TOOLS_COMMON_LATENCY_H_
#define FARM_TOOLS_COMMON_LATENCY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace farm {

class LatencySamples {
 public:
  explicit LatencySamples(size_t reserve = 1 << 20) { ns_.reserve(reserve); }
  void Add(uint64_t ns) { ns_.push_back(ns); }
  size_t count() const { return ns_.size(); }
  // p in [0, 100]; 0 when empty. Reorders the samples.
  double PercentileUs(double p);
  double MeanUs() const;
  void Clear() { ns_.clear(); }

 private:
  std::vector<uint64_t> ns_;
};

}  // namespace farm

#endif  // FARM_TOOLS_COMMON_LATENCY_H_
