// WorkloadModel: the immutable, shared half of the generator: the workload settings,
// the distribution data, the link counts and every distribution the loaders and
// requesters draw from. Built once per run; each thread pairs it with its own
// JavaRandom and MotifGenerators (the mutable half).
#ifndef FARM_TOOLS_LINKBENCH_MODEL_H_
#define FARM_TOOLS_LINKBENCH_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "tools/linkbench/distribution_data.h"
#include "tools/linkbench/distributions.h"
#include "tools/linkbench/java_random.h"
#include "tools/linkbench/link_counts.h"
#include "tools/linkbench/shuffler.h"
#include "tools/linkbench/workload.h"

namespace farm::linkbench {

// An id1 access pattern: a distribution over ranks [startid1, maxid1), then a
// fixed-seed shuffle from rank order to ids (LinkBenchRequest.chooseRequestID).
class AccessDistribution {
 public:
  AccessDistribution(const AccessConfig& config, int64_t startid1, int64_t maxid1, int64_t shuffler_seed);
  int64_t Next(JavaRandom& rng) const;

 private:
  int64_t startid1_;
  std::unique_ptr<ProbabilityDistribution> dist_;
  InvertibleShuffler shuffler_;
};

class WorkloadModel {
 public:
  WorkloadModel(Workload workload, DistributionData data);
  WorkloadModel(const WorkloadModel&) = delete;
  WorkloadModel& operator=(const WorkloadModel&) = delete;

  const Workload& workload() const { return workload_; }
  const LinkCounts& counts() const { return counts_; }

  // id1 for a link read: read_uncorr with probability read_uncorr_blend, else read
  // (correlated with out-degree: the nlinks shuffler's seed). Likewise writes.
  int64_t LinkReadId(JavaRandom& rng) const;
  int64_t LinkWriteId(JavaRandom& rng) const;
  int64_t NodeReadId(JavaRandom& rng) const { return node_read_->Next(rng); }
  int64_t NodeUpdateId(JavaRandom& rng) const { return node_update_->Next(rng); }
  int64_t NodeDeleteId(JavaRandom& rng) const { return node_delete_->Next(rng); }

  // Payload sizes: link data log-normal (median link_datasize, sigma 1) in [0, 254];
  // node data (median node_datasize) in [0, 1 MiB).
  size_t LinkDataSize(JavaRandom& rng) const { return static_cast<size_t>(link_size_.Choose(rng)); }
  size_t NodeDataSize(JavaRandom& rng) const { return static_cast<size_t>(node_size_.Choose(rng)); }
  // Ids per multiget (Geometric(p) on [1, 128) by default; 1 when not configured).
  int MultigetSize(JavaRandom& rng) const {
    return multiget_ ? static_cast<int>(multiget_->Choose(rng)) : 1;
  }

 private:
  const Workload workload_;
  const DistributionData data_;
  const LinkCounts counts_;
  std::unique_ptr<AccessDistribution> read_, read_uncorr_, write_, write_uncorr_;
  std::unique_ptr<AccessDistribution> node_read_, node_update_, node_delete_;
  LogNormalDistribution link_size_, node_size_;
  std::optional<GeometricDistribution> multiget_;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_MODEL_H_
