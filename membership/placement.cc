#include "membership/placement.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace farm::membership {
namespace {

absl::Status CheckRings(uint32_t rings) {
  if (rings < 1 || rings > kMaxVirtualRings) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d virtual rings outside [1, %d]", rings, kMaxVirtualRings));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RingPosition> SplitRegion(RegionId region, uint32_t rings) {
  if (absl::Status s = CheckRings(rings); !s.ok()) return s;
  if (IsPrivateRegion(region)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("region %#x is node-private and has no ring position", region));
  }
  const uint32_t positions = PositionsPerRing(rings);
  // rings * positions <= kFirstPrivateRegion, so the product fits in 32 bits.
  if (region >= rings * positions) {
    return absl::OutOfRangeError(absl::StrFormat(
        "region %d is past the %d ring positions of %d rings", region, rings * positions, rings));
  }
  return RingPosition{region / positions, region % positions};
}

absl::StatusOr<RegionId> JoinRegion(RingPosition at, uint32_t rings) {
  if (absl::Status s = CheckRings(rings); !s.ok()) return s;
  const uint32_t positions = PositionsPerRing(rings);
  if (at.ring >= rings || at.position >= positions) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ring %d position %d outside %d rings of %d positions", at.ring,
                        at.position, rings, positions));
  }
  return at.ring * positions + at.position;
}

bool ReplicaSet::Contains(NodeId node) const {
  const std::span<const NodeId> all = nodes();
  return std::find(all.begin(), all.end(), node) != all.end();
}

bool operator==(const ReplicaSet& a, const ReplicaSet& b) {
  return std::ranges::equal(a.nodes(), b.nodes());
}

std::string ReplicaSet::ToString() const {
  if (empty()) return "no replicas";
  return absl::StrFormat("primary %d, backups [%s]", primary(), absl::StrJoin(backups(), ", "));
}

absl::StatusOr<Placement> Placement::Create(const Configuration& config) {
  if (std::none_of(config.members.begin(), config.members.end(), [](const Member& m) { return !m.compute_only; })) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "configuration epoch %d has no members that hold regions: no region can be placed", config.epoch));
  }
  if (config.replication < 1 || config.replication > kMaxReplication) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replication %d outside [1, %d]", config.replication, kMaxReplication));
  }
  if (absl::Status s = CheckRings(config.virtual_rings); !s.ok()) return s;

  Placement p;
  p.epoch_ = config.epoch;
  p.replication_ = config.replication;
  p.rings_ = config.virtual_rings;
  p.positions_ = PositionsPerRing(config.virtual_rings);
  p.members_.reserve(config.members.size());
  NodeId previous = 0;
  for (const Member& m : config.members) {
    if (previous >= m.id) {
      return absl::InvalidArgumentError(
          absl::StrFormat("members not sorted and unique at node %d", m.id));
    }
    previous = m.id;
    p.all_members_.push_back(m.id);
    if (m.compute_only) continue;  // holds no regions
    p.members_.push_back(m.id);
  }

  const size_t n = p.members_.size();
  p.points_.resize(static_cast<size_t>(p.rings_) * n);
  for (uint32_t ring = 0; ring < p.rings_; ++ring) {
    Point* first = p.points_.data() + static_cast<size_t>(ring) * n;
    for (size_t i = 0; i < n; ++i) {
      first[i] = Point{NodePosition(p.members_[i], ring, p.rings_), p.members_[i]};
    }
    std::sort(first, first + n, Before);
  }
  return p;
}

bool Placement::IsMember(NodeId node) const {
  return std::binary_search(members_.begin(), members_.end(), node);
}

absl::StatusOr<ReplicaSet> Placement::Lookup(RegionId region) const {
  if (region == kNullRegion) {
    return absl::InvalidArgumentError("the null region is never placed");
  }
  absl::StatusOr<RingPosition> at = SplitRegion(region, rings_);
  if (!at.ok()) return at.status();

  const std::span<const Point> ring = Ring(at->ring);
  const size_t n = ring.size();
  // The first point at or after the position; past the last one the ring wraps to 0.
  size_t i =
      std::lower_bound(ring.begin(), ring.end(), at->position,
                       [](const Point& p, uint32_t position) { return p.position < position; }) -
      ring.begin();
  if (i == n) i = 0;
  ReplicaSet set;
  const size_t count = std::min<size_t>(replication_, n);
  for (size_t j = 0; j < count; ++j) set.Append(ring[(i + j) % n].node);
  return set;
}

absl::StatusOr<RegionId> Placement::PickRegionWithPrimary(NodeId node, uint32_t ring_index,
                                                          uint64_t random) const {
  if (!IsMember(node)) {
    if (std::binary_search(all_members_.begin(), all_members_.end(), node)) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "node %d is compute-only in epoch %d: it holds no regions (allocate near another "
          "machine's object)", node, epoch_));
    }
    return absl::NotFoundError(
        absl::StrFormat("node %d is not a member of epoch %d", node, epoch_));
  }
  if (ring_index >= rings_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ring %d outside the %d rings", ring_index, rings_));
  }
  const std::span<const Point> ring = Ring(ring_index);
  const size_t n = ring.size();
  const Point self{NodePosition(node, ring_index, rings_), node};
  const size_t i = std::lower_bound(ring.begin(), ring.end(), self, Before) - ring.begin();
  // i < n and ring[i] is `self`: every member has its point on every ring.
  const uint32_t predecessor = ring[(i + n - 1) % n].position;

  // The node is primary of the positions (predecessor, self.position], wrapping. When it
  // is first on the ring and the last point shares its position, every point does (the
  // ring is sorted): it owns the whole ring (this includes n == 1).
  uint64_t arc = 0;
  if (i == 0 && predecessor == self.position) {
    arc = positions_;
  } else {
    arc = (static_cast<uint64_t>(self.position) + positions_ - predecessor) % positions_;
  }
  if (arc == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "node %d shares its position on ring %d with node %d and is primary of nothing there", node,
        ring_index, ring[(i + n - 1) % n].node));
  }
  const uint64_t start = (static_cast<uint64_t>(predecessor) + 1) % positions_;
  uint64_t offset = random % arc;
  uint64_t position = (start + offset) % positions_;
  if (ring_index == 0 && position == 0) {  // the null region: take the next in the arc
    if (arc == 1) {
      return absl::FailedPreconditionError(
          absl::StrFormat("node %d is primary only of the null region's position on ring 0", node));
    }
    offset = (offset + 1) % arc;
    position = (start + offset) % positions_;
  }
  return JoinRegion(RingPosition{ring_index, static_cast<uint32_t>(position)}, rings_);
}

void PlacementCache::Update(std::shared_ptr<const Placement> placement) {
  const bool same_epoch =
      placement_ != nullptr && placement != nullptr && placement_->epoch() == placement->epoch();
  if (!same_epoch) {
    if (placement_ != nullptr) ++stats_.invalidations;
    cache_.clear();
  }
  placement_ = std::move(placement);
}

absl::StatusOr<ReplicaSet> PlacementCache::Lookup(RegionId region) {
  if (placement_ == nullptr) {
    return absl::FailedPreconditionError("no placement installed in the placement cache");
  }
  if (auto it = cache_.find(region); it != cache_.end()) {
    ++stats_.hits;
    return it->second;
  }
  ++stats_.misses;
  absl::StatusOr<ReplicaSet> set = placement_->Lookup(region);
  if (set.ok()) cache_.emplace(region, *set);
  return set;
}

}  // namespace farm::membership
