// FixedEnvironment: an AllocatorEnvironment with a fixed configuration and no fabric,
// for allocators that run alone (tests, the allocation benchmark).
#ifndef FARM_ALLOC_FIXED_ENVIRONMENT_H_
#define FARM_ALLOC_FIXED_ENVIRONMENT_H_

#include <memory>
#include <vector>

#include "alloc/allocator.h"

namespace farm::alloc {

class FixedEnvironment final : public AllocatorEnvironment {
 public:
  // A configuration of `members` (sorted, unique) with replication `r` and `rings` rings.
  static absl::StatusOr<std::unique_ptr<FixedEnvironment>> Create(std::vector<NodeId> members,
                                                                  uint32_t r = 1,
                                                                  uint32_t rings = 100);
  std::shared_ptr<const membership::Placement> placement() const override { return placement_; }
  absl::StatusOr<RegionCapability> RegisterRegion(const Region& region) override {
    return RegionCapability{region.id(), 0, region.size(), 0, 0};  // no fabric: never used
  }
  absl::Status DeregisterRegion(RegionId region) override { return absl::OkStatus(); }

 private:
  explicit FixedEnvironment(std::shared_ptr<const membership::Placement> p) : placement_(std::move(p)) {}
  std::shared_ptr<const membership::Placement> placement_;
};

inline absl::StatusOr<std::unique_ptr<FixedEnvironment>> FixedEnvironment::Create(
    std::vector<NodeId> members, uint32_t r, uint32_t rings) {
  membership::Configuration config;
  config.epoch = 1;
  config.replication = r;
  config.virtual_rings = rings;
  for (NodeId id : members) {
    membership::Member m;
    m.id = id;
    config.members.push_back(m);
  }
  if (!members.empty()) config.manager = members.front();
  absl::StatusOr<membership::Placement> p = membership::Placement::Create(config);
  if (!p.ok()) return p.status();
  return std::unique_ptr<FixedEnvironment>(
      new FixedEnvironment(std::make_shared<const membership::Placement>(std::move(*p))));
}

}  // namespace farm::alloc

#endif  // FARM_ALLOC_FIXED_ENVIRONMENT_H_
