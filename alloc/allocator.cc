#include "alloc/allocator.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "alloc/region_format.h"
#include "alloc/scan.h"
#include "alloc/size_classes.h"
#include "alloc/thread_allocator.h"
#include "farm/base/object_layout.h"

namespace farm::alloc {

absl::StatusOr<std::unique_ptr<Allocator>> Allocator::Create(const AllocatorOptions& options,
                                                             AllocatorEnvironment* environment,
                                                             EpochManager* epochs) {
  if (options.region_bytes < kMinRegionBytes || options.region_bytes > kMaxRegionSize ||
      options.region_bytes % kBlockUnitBytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "region size %d: must be a multiple of 1 MiB between %d and %d bytes", options.region_bytes,
        kMinRegionBytes, kMaxRegionSize));
  }
  AllocatorOptions resolved = options;
  if (resolved.capacity_bytes == 0) resolved.capacity_bytes = resolved.region_bytes;
  if (resolved.capacity_bytes < resolved.region_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "capacity %d bytes is less than one region (%d bytes)", resolved.capacity_bytes,
        resolved.region_bytes));
  }
  return std::unique_ptr<Allocator>(new Allocator(resolved, environment, epochs));
}

Allocator::Allocator(const AllocatorOptions& options, AllocatorEnvironment* environment,
                     EpochManager* epochs)
    : options_(options),
      max_regions_(options.capacity_bytes / options.region_bytes),
      environment_(environment),
      epochs_(epochs) {}

Allocator::~Allocator() = default;

absl::StatusOr<std::unique_ptr<ThreadAllocator>> Allocator::NewThread(ThreadChannel* channel) {
  absl::StatusOr<EpochParticipant> participant = epochs_->Register();
  if (!participant.ok()) return participant.status();
  return std::unique_ptr<ThreadAllocator>(new ThreadAllocator(this, channel, std::move(*participant)));
}

absl::StatusOr<RegionId> Allocator::PickRegionId(const membership::Placement& placement,
                                                 std::optional<membership::RingPosition> near) {
  absl::BitGen rng;
  const NodeId self = options_.self;
  const uint32_t rings = placement.virtual_rings();
  const uint32_t positions = placement.positions_per_ring();
  // A region id this node would be primary of and does not hold yet.
  // Claims it for this creation when it is (BeginCreation: no concurrent creation of
  // the same id).
  auto usable = [&](RegionId id) {
    if (id == kNullRegion || blocks_.FindRegion(id) != nullptr) return false;
    absl::StatusOr<membership::ReplicaSet> rs = placement.Lookup(id);
    return rs.ok() && rs->primary() == self && BeginCreation(id);
  };
  if (near.has_value()) {
    // Positions close to the hint's, widening: a region there has (with high
    // probability) the same replicas, now and after the next reconfiguration.
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int64_t window = int64_t{1} << std::min(8 + attempt / 4, 24);
      const int64_t delta = absl::Uniform<int64_t>(absl::IntervalClosed, rng, -window, window);
      const uint32_t position = static_cast<uint32_t>(
          (static_cast<int64_t>(near->position) + delta % positions + positions) % positions);
      absl::StatusOr<RegionId> id = membership::JoinRegion({near->ring, position}, rings);
      if (id.ok() && usable(*id)) return *id;
    }
    for (int attempt = 0; attempt < 16; ++attempt) {
      absl::StatusOr<RegionId> id =
          placement.PickRegionWithPrimary(self, near->ring, absl::Uniform<uint64_t>(rng));
      if (!id.ok()) break;
      if (usable(*id)) return *id;
    }
  }
  // A ring at random and a position in this node's arc there; rings where it owns no
  // arc are skipped.
  const uint32_t first = absl::Uniform<uint32_t>(rng, 0, rings);
  absl::Status last = absl::NotFoundError("no ring");
  for (uint32_t i = 0; i < rings; ++i) {
    const uint32_t ring = (first + i) % rings;
    for (int attempt = 0; attempt < 4; ++attempt) {
      absl::StatusOr<RegionId> id = placement.PickRegionWithPrimary(self, ring, absl::Uniform<uint64_t>(rng));
      if (id.ok() && usable(*id)) return *id;
      if (!id.ok()) {
        last = id.status();
        if (!absl::IsFailedPrecondition(last)) return last;
        break;
      }
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("no region id with this node as primary is free: ", last.message()));
}

absl::StatusOr<std::unique_ptr<LocalRegion>> Allocator::CreateRegion(
    std::optional<membership::RingPosition> near, std::vector<NodeId>* backups) {
  if (regions_reserved_.fetch_add(1) >= max_regions_) {
    regions_reserved_.fetch_sub(1);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "out of memory: this node's capacity of %d bytes (%d regions of %d bytes) is in use",
        options_.capacity_bytes, max_regions_, options_.region_bytes));
  }
  auto release = [this](absl::Status s) {
    regions_reserved_.fetch_sub(1);
    return s;
  };
  std::shared_ptr<const membership::Placement> placement = environment_->placement();
  if (placement == nullptr) return release(absl::UnavailableError("no configuration to place a region in"));
  if (!std::binary_search(placement->all_members().begin(), placement->all_members().end(),
                          options_.self)) {
    // A joining node's allocation may run before it applies the configuration that
    // adds it: not serving yet, so retryable.
    return release(absl::UnavailableError(absl::StrFormat(
        "node %d is not serving yet: not a member of epoch %d", options_.self, placement->epoch())));
  }
  absl::StatusOr<RegionId> id = PickRegionId(*placement, near);
  if (!id.ok()) return release(id.status());
  auto release_id = [&](absl::Status s) {
    EndCreation(*id);
    return release(std::move(s));
  };
  absl::StatusOr<membership::RingPosition> at = membership::SplitRegion(*id, placement->virtual_rings());
  if (!at.ok()) return release_id(at.status());
  absl::StatusOr<Region> region = Region::Create(*id, options_.region_bytes, options_.region);
  if (!region.ok()) {
    return release_id(absl::ResourceExhaustedError(
        absl::StrCat("out of memory: cannot create region ", *id, ": ", region.status().message())));
  }
  auto memory = std::make_unique<Region>(std::move(*region));
  if (absl::Status s = FormatRegion(memory->base(), *id, memory->size()); !s.ok()) return release_id(s);
  absl::StatusOr<RegionCapability> capability = environment_->RegisterRegion(*memory);
  if (!capability.ok()) return release_id(capability.status());
  absl::StatusOr<membership::ReplicaSet> replicas = placement->Lookup(*id);
  if (!replicas.ok()) {
    (void)environment_->DeregisterRegion(*id);
    return release_id(replicas.status());
  }
  backups->assign(replicas->backups().begin(), replicas->backups().end());
  return std::make_unique<LocalRegion>(std::move(memory), at->ring, at->position, *capability);
}

absl::Status Allocator::AddCreatedRegion(std::unique_ptr<LocalRegion> region) {
  const RegionId id = region->id();
  if (absl::Status s = blocks_.AddRegion(region); !s.ok()) {
    DropCreatedRegion(std::move(region));
    return s;
  }
  EndCreation(id);
  regions_created_.fetch_add(1);
  return absl::OkStatus();
}

void Allocator::DropCreatedRegion(std::unique_ptr<LocalRegion> region) {
  if (region == nullptr) return;
  const RegionId id = region->id();
  (void)environment_->DeregisterRegion(id);
  region.reset();
  EndCreation(id);
  regions_reserved_.fetch_sub(1);
}

bool Allocator::BeginCreation(RegionId id) {
  MutexLock lock(&creating_mu_);
  return creating_.insert(id).second;
}

void Allocator::EndCreation(RegionId id) {
  MutexLock lock(&creating_mu_);
  creating_.erase(id);
}

void MarkOneSidedObjectsLost(char* base, const RegionScan& scan) {
  for (const ScannedBlock& b : scan.blocks) {
    const uint64_t slot_bytes = ClassInfo(b.size_class).slot_bytes;
    for (uint32_t slot : b.live_slots) {
      char* word = base + uint64_t{b.first_unit} * kBlockUnitBytes + slot * slot_bytes + kVersionOffset;
      if (!IsRawHeaderWord(LoadHeaderWord(word))) continue;
      // An OR, not a store: the region is registered already, so a peer's late CAS on
      // the word must not be able to undo it.
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(word)).fetch_or(kRawLost, std::memory_order_acq_rel);
    }
  }
}

absl::Status Allocator::AdoptRegion(std::unique_ptr<Region> region, RegionCapability capability) {
  std::shared_ptr<const membership::Placement> placement = environment_->placement();
  if (placement == nullptr) return absl::UnavailableError("no configuration to place the region in");
  absl::StatusOr<membership::RingPosition> at =
      membership::SplitRegion(region->id(), placement->virtual_rings());
  if (!at.ok()) return at.status();
  if (blocks_.FindRegion(region->id()) != nullptr) {
    return absl::AlreadyExistsError(absl::StrFormat("region %d is held already", region->id()));
  }
  absl::StatusOr<RegionScan> scan = ScanRegion(region->base(), region->id(), region->size());
  if (!scan.ok()) return scan.status();
  MarkOneSidedObjectsLost(region->base(), *scan);
  const RegionId id = region->id();
  auto local = std::make_unique<LocalRegion>(std::move(region), at->ring, at->position, capability);
  if (absl::Status s = blocks_.AddRegion(local); !s.ok()) return s;
  regions_reserved_.fetch_add(1);
  regions_created_.fetch_add(1);
  std::vector<uint32_t> firsts;
  std::vector<std::vector<uint32_t>> live;
  for (const ScannedBlock& b : scan->blocks) {
    firsts.push_back(b.first_unit);
    live.push_back(b.live_slots);
  }
  return blocks_.AdoptScanned(id, firsts, live);
}

absl::Status Allocator::RetireRegion(RegionId id) {
  if (absl::Status s = blocks_.Retire(id); !s.ok()) return s;
  regions_reserved_.fetch_sub(1);
  return absl::OkStatus();
}

absl::StatusOr<NodeId> Allocator::RemotePrimary(RegionId region) const {
  PlacementCache uncached;
  return RemotePrimary(region, &uncached);
}

absl::StatusOr<NodeId> Allocator::RemotePrimary(RegionId region, PlacementCache* cache) const {
  const uint64_t generation = environment_->placement_generation();
  if (cache->placement == nullptr || cache->generation != generation) {
    cache->generation = generation;  // read before the placement: a change between them refreshes again
    cache->placement = environment_->placement();
  }
  const membership::Placement* placement = cache->placement.get();
  if (placement == nullptr) return absl::UnavailableError("no configuration yet");
  absl::StatusOr<membership::ReplicaSet> replicas = placement->Lookup(region);
  if (!replicas.ok()) return replicas.status();
  if (replicas->primary() == options_.self) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "region %d has this node as primary in epoch %d but this node holds no copy of it", region,
        placement->epoch()));
  }
  return replicas->primary();
}

std::vector<NodeId> Allocator::BackupsOf(RegionId region) const {
  std::vector<NodeId> backups;
  if (std::shared_ptr<const membership::Placement> p = environment_->placement()) {
    if (absl::StatusOr<membership::ReplicaSet> rs = p->Lookup(region); rs.ok()) {
      backups.assign(rs->backups().begin(), rs->backups().end());
    }
  }
  return backups;
}

AllocatorStats Allocator::Stats() const {
  AllocatorStats s;
  s.blocks = blocks_.Stats();
  s.regions_created = regions_created_.load();
  s.max_regions = max_regions_;
  return s;
}

}  // namespace farm::alloc
