// kv_bench's figures of FaRM's hopscotch table (paper section 3.6), the reference
// layout, as kv_bench measured them before the layouts seam:
//
//   --benchmarks=h         fill a 1-node table to `occupancy` with 16-byte keys and
//                          32-byte values, then look every key up: object READs per
//                          lookup (the bucket pair is one READ), payload bytes per
//                          lookup, and space utilisation, for each H and for inline and
//                          out-of-line values;
//   --benchmarks=churn     for each H: fill, remove every key, put every key back: time
//                          per remove and per put (1 node, shipped updates, 64 in
//                          flight), the cost of chain collapse;
//   --benchmarks=multiget  lookups of `batch` keys issued together vs one after another
//                          on a 2-node tcp cluster (remote keys): time per batch.
#ifndef FARM_TOOLS_KV_BENCH_HOPSCOTCH_FIGURES_H_
#define FARM_TOOLS_KV_BENCH_HOPSCOTCH_FIGURES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace farm::kv::bench {

struct HopscotchOptions {
  uint64_t buckets = 20000;
  double occupancy = 0.9;
  uint32_t batch = 24;
  uint32_t batches = 2000;
  std::string dir = "/tmp/farm-kv-bench";
};

struct HLayoutResult {
  double occupancy = 0;
  double reads_per_lookup = 0;
  double bytes_per_lookup = 0;
  double utilisation = 0;
  uint64_t overflow_blocks = 0;
};
absl::StatusOr<HLayoutResult> MeasureHopscotchLayout(const HopscotchOptions& o, uint32_t h, bool inline_values);

struct ChurnResult {
  uint64_t pairs = 0;
  uint64_t overflow_blocks = 0;  // when full
  double us_per_remove = 0;
  double us_per_put = 0;
};
absl::StatusOr<ChurnResult> MeasureChurn(const HopscotchOptions& o, uint32_t h);

// Prints its two lines.
absl::Status MeasureMultiGet(const HopscotchOptions& o);

}  // namespace farm::kv::bench

#endif  // FARM_TOOLS_KV_BENCH_HOPSCOTCH_FIGURES_H_
