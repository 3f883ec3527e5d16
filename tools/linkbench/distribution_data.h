// DistributionData: LinkBench's Distribution.dat, the empirical CDFs measured at
// Facebook: `nlinks` (out-degree), `link_nreads`, `link_nwrites`, `node_nreads`,
// `node_nwrites` (accesses per id). The file is a sequence of sections, each a name
// followed by `value percent` pairs (percent cumulative, 0..100); read as LinkBench's
// RealDistribution does (whitespace-separated tokens).
//
// Immutable after Load; share it between threads freely.
#ifndef FARM_TOOLS_LINKBENCH_DISTRIBUTION_DATA_H_
#define FARM_TOOLS_LINKBENCH_DISTRIBUTION_DATA_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace farm::linkbench {

struct CdfPoint {
  int64_t value = 0;
  double probability = 0;  // cumulative, 0..1
};
using Cdf = std::vector<CdfPoint>;

class DistributionData {
 public:
  // NotFound when the file cannot be read; InvalidArgument on a malformed file or when
  // the `nlinks` section is missing.
  static absl::StatusOr<DistributionData> Load(const std::string& path);
  static absl::StatusOr<DistributionData> Parse(const std::string& text, const std::string& origin);

  // The named CDF (nlinks, link_nreads, ...), or nullptr when the file had none.
  const Cdf* Find(const std::string& name) const;
  const Cdf& nlinks() const { return *Find("nlinks"); }

 private:
  std::map<std::string, Cdf> cdfs_;
};

// The first point whose probability is >= p (LinkBench's binarySearch over points);
// points.size() when p is above every point.
size_t CdfSearch(const Cdf& cdf, double p);

// The real `nlinks` function: the out-degree of the id of rank `rank` (0 = the most
// links) among n ids (PiecewiseLinearDistribution.expectedCount with min = 0, max = n):
// the value of the first CDF point at or above u = 1 - rank / n. (quirk) Rank 0 has
// u = 1.0 and takes the CDF's maximum, 961,963 with Facebook's data, at every graph size.
int64_t RealNlinks(const Cdf& cdf, int64_t rank, int64_t n);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_DISTRIBUTION_DATA_H_
