// Placement: which machines hold a shared region, by consistent hashing with k virtual
// rings (paper section 3.3).
//
// Region ids. With k rings each ring has P = floor(kFirstPrivateRegion / k) positions
// and a shared region id names a ring and a position on it:
//     region = ring * P + position,   ring in [0, k), position in [0, P).
// The mapping is a bijection between [0, k*P) and the (ring, position) pairs, so the
// region allocator can choose a ring and a position and derive the id. Ids in
// [k*P, kFirstPrivateRegion) name nothing; node-private ids (>= kFirstPrivateRegion) are
// never placed. Region 0 (ring 0, position 0) is the null region: it has a position
// but is never looked up or handed out.
//
// Machines on rings. Every member is hashed onto every ring at
//     NodePosition(node, ring, k) = RingHash(node, ring) mod P
// where RingHash is a fixed function (SplitMix64's finalizer, see below) so that every
// node, process and build computes the same positions. Node ids are the identity that is
// hashed (the paper hashes IP addresses): a node that rejoins under its id returns to
// the same positions. Two members on one position are ordered by node id, smaller
// first, so the order of a ring is total and the same everywhere.
//
// Replicas. The primary of a region is the first member at or after the region's
// position on its ring, wrapping past P-1 to 0; its r-1 backups are the members that
// follow, clockwise. Each member has exactly one point per ring, so these are r distinct
// members. With fewer than r members the replica set is all members, in ring order.
// "Members" here are the configuration's members that hold regions: compute-only ones
// (Member::compute_only) have no points, so their joining or leaving moves nothing.
//
// Consequences relied on above (and tested): the mapping is a pure function of the
// member ids, r and k; removing a member changes only the replica sets that contained
// it (it drops out, the rest keep their order, the next member clockwise joins at the
// end), so primaries move only for the regions it was primary of; adding a member moves
// to it about 1/n of the primaries and changes no replica set it does not join.
#ifndef FARM_MEMBERSHIP_PLACEMENT_H_
#define FARM_MEMBERSHIP_PLACEMENT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "farm/base/address.h"
#include "membership/configuration.h"

namespace farm::membership {

// Positions on each of `rings` rings; 0 for 0 rings.
constexpr uint32_t PositionsPerRing(uint32_t rings) {
  return rings == 0 ? 0 : kFirstPrivateRegion / rings;
}

struct RingPosition {
  uint32_t ring = 0;
  uint32_t position = 0;

  friend constexpr bool operator==(const RingPosition&, const RingPosition&) = default;
};

// region -> (ring, position) with `rings` rings. Errors: InvalidArgument for `rings`
// outside [1, kMaxVirtualRings] or a node-private region; OutOfRange for a shared id at
// or above rings * PositionsPerRing(rings).
absl::StatusOr<RingPosition> SplitRegion(RegionId region, uint32_t rings);
// The inverse: (ring, position) -> region. InvalidArgument for `rings` outside
// [1, kMaxVirtualRings], ring >= rings or position >= PositionsPerRing(rings).
absl::StatusOr<RegionId> JoinRegion(RingPosition at, uint32_t rings);

// The fixed hash that places nodes on rings. With x = uint64(node) << 32 | ring:
//     z = x + 0x9E3779B97F4A7C15
//     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//     z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//     return z ^ (z >> 31)
// (SplitMix64's output function; all arithmetic mod 2^64). It is part of the placement
// format: changing it moves every region, so it must never change within a cluster.
constexpr uint64_t RingHash(NodeId node, uint32_t ring) {
  uint64_t z = ((static_cast<uint64_t>(node) << 32) | ring) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Where `node` sits on `ring` when there are `rings` rings. Precondition: rings >= 1.
constexpr uint32_t NodePosition(NodeId node, uint32_t ring, uint32_t rings) {
  return static_cast<uint32_t>(RingHash(node, ring) % PositionsPerRing(rings));
}

// The machines holding one region: primary first, then backups in ring order. A value
// of fixed capacity (no allocation); never empty when it comes from a Placement.
class ReplicaSet {
 public:
  static constexpr size_t kCapacity = kMaxReplication;

  ReplicaSet() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Precondition: !empty().
  NodeId primary() const { return nodes_[0]; }
  // All replicas, primary first.
  std::span<const NodeId> nodes() const { return {nodes_.data(), size_}; }
  // The replicas after the primary, in order; empty when there are none.
  std::span<const NodeId> backups() const {
    return size_ == 0 ? std::span<const NodeId>() : nodes().subspan(1);
  }
  NodeId operator[](size_t i) const { return nodes_[i]; }
  bool Contains(NodeId node) const;

  friend bool operator==(const ReplicaSet& a, const ReplicaSet& b);
  // "primary 3, backups [5, 1]".
  std::string ToString() const;

 private:
  friend class Placement;
  // Precondition: size() < kCapacity.
  void Append(NodeId node) { nodes_[size_++] = node; }

  std::array<NodeId, kCapacity> nodes_{};
  uint32_t size_ = 0;
};

// The placement of all shared regions under one configuration. Immutable once built,
// so one instance may be shared by any number of threads (as shared_ptr<const>).
class Placement {
 public:
  // Errors: FailedPrecondition when the configuration has no members (nothing can hold
  // a region); InvalidArgument when replication is outside [1, kMaxReplication],
  // virtual_rings outside [1, kMaxVirtualRings] or members are not sorted and unique.
  // Other fields are not looked at (Validate checks them).
  static absl::StatusOr<Placement> Create(const Configuration& config);

  uint64_t epoch() const { return epoch_; }
  uint32_t replication() const { return replication_; }
  uint32_t virtual_rings() const { return rings_; }
  uint32_t positions_per_ring() const { return positions_; }
  // The ids of the members that hold regions (not the compute-only ones), sorted.
  const std::vector<NodeId>& members() const { return members_; }
  // Every member of the configuration, compute-only ones included, sorted: the nodes
  // that may run transactions and lock-free reads (e.g. for the allocator's epoch
  // rounds, which must hear from every reader before memory is reused).
  const std::vector<NodeId>& all_members() const { return all_members_; }
  bool IsMember(NodeId node) const;

  // The min(r, n) replicas of `region`. Errors: InvalidArgument for the null region or
  // a node-private one; OutOfRange for an id that names no ring position.
  absl::StatusOr<ReplicaSet> Lookup(RegionId region) const;

  // For the region allocator: a region on `ring` whose primary is `node`, chosen by
  // `random` among the positions (p, q] where q is the node's position and p its
  // predecessor's (the whole ring for a single member). The same arguments give the
  // same region; uniform `random` gives (nearly) uniform choices. Never the null region.
  // Errors: NotFound when `node` is not a member; ResourceExhausted when it is a
  // compute-only one (it holds no regions); InvalidArgument for ring >= k;
  // FailedPrecondition when the node is primary of no position on `ring` (it shares its
  // position with a smaller node id, or its only position is the null region's), and
  // the caller picks another ring.
  absl::StatusOr<RegionId> PickRegionWithPrimary(NodeId node, uint32_t ring, uint64_t random) const;

 private:
  // One member's place on one ring. A ring is sorted by (position, node).
  struct Point {
    uint32_t position;
    NodeId node;
  };

  // The order of a ring: by position, then node id.
  static bool Before(const Point& a, const Point& b) {
    return a.position != b.position ? a.position < b.position : a.node < b.node;
  }

  Placement() = default;
  std::span<const Point> Ring(uint32_t ring) const {
    return {points_.data() + static_cast<size_t>(ring) * members_.size(), members_.size()};
  }

  uint64_t epoch_ = 0;
  uint32_t replication_ = 1;
  uint32_t rings_ = 1;
  uint32_t positions_ = 0;
  std::vector<NodeId> members_;
  std::vector<NodeId> all_members_;
  // Ring i is points_[i*n, (i+1)*n), n = members_.size().
  std::vector<Point> points_;
};

struct PlacementCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;         // lookups that went to the Placement, including errors
  uint64_t invalidations = 0;  // Updates that replaced a placement by another epoch's or none
};

// A per-thread memo of Placement::Lookup in front of the current placement.
//
// Not thread-safe: each thread owns its own cache (the Placement behind it is shared).
// Entries are valid for one epoch only: Update with a placement of another epoch drops
// them all, so a lookup never returns a replica set from an older configuration than
// the placement it holds. Errors are not cached. The cache holds at most one entry per
// region looked up in the epoch.
class PlacementCache {
 public:
  PlacementCache() = default;
  explicit PlacementCache(std::shared_ptr<const Placement> placement) {
    Update(std::move(placement));
  }

  // Installs `placement` (null: none). The cached entries are kept only when both the
  // old and the new placement exist and have the same epoch (an epoch names one
  // configuration, so they place every region alike).
  void Update(std::shared_ptr<const Placement> placement);

  // Placement::Lookup through the cache. FailedPrecondition when no placement is
  // installed.
  absl::StatusOr<ReplicaSet> Lookup(RegionId region);

  // The installed placement, or null.
  const std::shared_ptr<const Placement>& placement() const { return placement_; }
  size_t cached_regions() const { return cache_.size(); }
  const PlacementCacheStats& stats() const { return stats_; }

 private:
  std::shared_ptr<const Placement> placement_;
  absl::flat_hash_map<RegionId, ReplicaSet> cache_;
  PlacementCacheStats stats_;
};

}  // namespace farm::membership

#endif  // FARM_MEMBERSHIP_PLACEMENT_H_
