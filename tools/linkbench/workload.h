// Workload: every LinkBench setting the driver uses, read from a workload properties
// file (FBWorkload.properties by default) with LinkBench's keys, defaults and quirks,
// plus the TAO operation mix (--mix=tao).
//
// A plain value; immutable once built. See README.md for the list of faithful
// behaviours.
#ifndef FARM_TOOLS_LINKBENCH_WORKLOAD_H_
#define FARM_TOOLS_LINKBENCH_WORKLOAD_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "tools/linkbench/op_type.h"
#include "tools/linkbench/properties.h"

namespace farm::linkbench {

// MotifDataGenerator's settings (bytes in [start_byte, end_byte], both inclusive).
struct DataGenConfig {
  int start_byte = 32;
  int end_byte = 100;
  double uniqueness = 0.225;
  // (quirk) LinkBench tests the *values* for the motif_length key (Hashtable.contains),
  // so the configured length is never read: the buffer is always 512 bytes.
  int motif_bytes = 512;
};

// An id1 access distribution: Zipf with a shape, or uniform.
struct AccessConfig {
  enum class Kind { kZipf, kUniform } kind = Kind::kZipf;
  double shape = 0;
};

struct Workload {
  // Graph.
  int64_t startid1 = 1;
  int64_t maxid1 = 10000001;  // exclusive
  int link_type_count = 2;
  int64_t randomid2max = 0;  // 0: id2 = id1 + j
  int id2gen_config = 0;

  // Payloads: log-normal sizes (sigma 1.0) with these medians, motif contents.
  double link_datasize = 8;
  double node_datasize = 128;
  DataGenConfig link_add, link_up, node_add, node_up;

  // Request mix: percentages in OpType order (summing to 100).
  std::array<double, kOpTypeCount> mix{};
  // Fraction (not percent) of getlinklist requests that re-fetch older history.
  double getlinklist_history = 0;
  // The page size of getlinklist (LinkBench: the range limit 10000).
  uint32_t list_limit = 10000;
  // Fraction of getlinklist requests that are time-bounded (TAO's assoc_time_range;
  // 0 for LinkBench), over a window of `time_range_ms` ending at a random point of the
  // load's time span.
  double time_range_fraction = 0;
  int64_t time_range_ms = 0;

  // id1 access distributions.
  AccessConfig read, read_uncorr, write, write_uncorr, node_read, node_update, node_delete;
  double read_uncorr_blend = 0;   // fraction
  double write_uncorr_blend = 0;  // fraction (quirk: read from read_uncorr_blend)

  // Multiget size: Geometric(p) on [min, max); disabled: one id2.
  bool multiget_geometric = true;
  int64_t multiget_min = 1, multiget_max = 128;
  double multiget_p = 0.382;

  std::string mix_name = "linkbench";
};

// Reads a workload file; errors name the key and the file.
absl::StatusOr<Workload> WorkloadFromProperties(const Properties& props);

// Replaces the request mix with the TAO paper's (see workload.cc for the figures).
void ApplyTaoMix(Workload& workload);

// The op for r in [0, 100) under LinkBench's rule: the first op whose cumulative
// percentage is >= r. kOpTypeCount (no op) only when the mix sums to under r.
size_t ChooseOp(const std::array<double, kOpTypeCount>& cumulative, double r);
std::array<double, kOpTypeCount> Cumulative(const std::array<double, kOpTypeCount>& mix);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_WORKLOAD_H_
