#include "tools/linkbench/model.h"

#include <utility>

#include "graph/types.h"

namespace farm::linkbench {

AccessDistribution::AccessDistribution(const AccessConfig& config, int64_t startid1, int64_t maxid1,
                                       int64_t shuffler_seed)
    : startid1_(startid1), shuffler_(shuffler_seed, kShufflerGroups, maxid1 - startid1) {
  if (config.kind == AccessConfig::Kind::kZipf) {
    dist_ = std::make_unique<ZipfDistribution>(startid1, maxid1, config.shape);
  } else {
    dist_ = std::make_unique<UniformDistribution>(startid1, maxid1);
  }
}

int64_t AccessDistribution::Next(JavaRandom& rng) const {
  const int64_t rank = dist_->Choose(rng);
  return startid1_ + shuffler_.Permute(rank - startid1_);
}

WorkloadModel::WorkloadModel(Workload workload, DistributionData data)
    : workload_(std::move(workload)),
      data_(std::move(data)),
      counts_(data_.nlinks(), workload_),
      link_size_(0, graph::kMaxLinkDataBytes, workload_.link_datasize, 1.0),
      node_size_(0, graph::kMaxNodeDataBytes, workload_.node_datasize, 1.0) {
  const Workload& w = workload_;
  auto make = [&](const AccessConfig& c, int64_t seed) {
    return std::make_unique<AccessDistribution>(c, w.startid1, w.maxid1, seed);
  };
  // Shuffler seeds per kind, as RealDistribution.getShuffler.
  read_ = make(w.read, kNlinksShufflerSeed);
  write_ = make(w.write, kNlinksShufflerSeed);
  if (w.read_uncorr_blend > 0) read_uncorr_ = make(w.read_uncorr, kUncorrShufflerSeed);
  if (w.write_uncorr_blend > 0) write_uncorr_ = make(w.write_uncorr, kUncorrShufflerSeed);
  node_read_ = make(w.node_read, kNodeShufflerSeed);
  node_update_ = make(w.node_update, kNodeShufflerSeed);
  node_delete_ = make(w.node_delete, kNodeShufflerSeed);
  if (w.multiget_geometric) multiget_.emplace(w.multiget_min, w.multiget_max, w.multiget_p);
}

int64_t WorkloadModel::LinkReadId(JavaRandom& rng) const {
  if (read_uncorr_ == nullptr || rng.NextDouble() >= workload_.read_uncorr_blend) return read_->Next(rng);
  return read_uncorr_->Next(rng);
}

int64_t WorkloadModel::LinkWriteId(JavaRandom& rng) const {
  if (write_uncorr_ == nullptr || rng.NextDouble() >= workload_.write_uncorr_blend) return write_->Next(rng);
  return write_uncorr_->Next(rng);
}

}  // namespace farm::linkbench
