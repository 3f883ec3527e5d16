#include "tools/common/latency.h"

#include <algorithm>
#include <numeric>

namespace farm {

double LatencySamples::PercentileUs(double p) {
  if (ns_.empty()) return 0;
  const size_t k = std::min(ns_.size() - 1, static_cast<size_t>(p / 100.0 * ns_.size()));
  std::nth_element(ns_.begin(), ns_.begin() + k, ns_.end());
  return ns_[k] / 1000.0;
}

double LatencySamples::MeanUs() const {
  if (ns_.empty()) return 0;
  return std::accumulate(ns_.begin(), ns_.end(), 0.0) / ns_.size() / 1000.0;
}

}  // namespace farm
