#include "alloc/block_allocator.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"

namespace farm::alloc {

LocalRegion::LocalRegion(std::unique_ptr<Region> region, uint32_t ring, uint32_t position,
                         RegionCapability capability)
    : region_(std::move(region)),
      units_(UnitsOf(region_->size())),
      ring_(ring),
      position_(position),
      capability_(capability),
      blocks_(new std::atomic<SlabBlock*>[units_]) {
  for (uint32_t u = 0; u < units_; ++u) blocks_[u].store(nullptr, std::memory_order_relaxed);
  for (uint32_t u = 1; u < units_; ++u) {
    if (BlockState::Decode(LoadBlockWord(base(), u)).kind == BlockKind::kFree) ++free_units_;
  }
}

BlockAllocator::~BlockAllocator() = default;

absl::Status BlockAllocator::AddRegion(std::unique_ptr<LocalRegion>& region) {
  MutexLock lock(&mu_);
  if (by_id_.contains(region->id())) {
    return absl::AlreadyExistsError(absl::StrFormat("region %d is held already", region->id()));
  }
  by_id_[region->id()] = region.get();
  found_.Update([&](auto& m) { m[region->id()] = region.get(); });
  regions_.push_back(std::move(region));
  return absl::OkStatus();
}

LocalRegion* BlockAllocator::FindRegion(RegionId id) const { return found_.Find(id); }

std::vector<LocalRegion*> BlockAllocator::Regions() const {
  MutexLock lock(&mu_);
  std::vector<LocalRegion*> out;
  for (const auto& r : regions_) {
    if (!r->retired_) out.push_back(r.get());
  }
  return out;
}

absl::Status BlockAllocator::Retire(RegionId id) {
  MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return absl::NotFoundError(absl::StrFormat("region %d is not held", id));
  LocalRegion* r = it->second;
  r->set_leaving(true);
  r->set_frozen(true);
  r->retired_ = true;
  by_id_.erase(it);
  found_.Update([id](auto& m) { m.erase(id); });
  return absl::OkStatus();
}

int64_t BlockAllocator::FindFreeRun(const LocalRegion& r, uint32_t n) {
  if (r.free_units_ < n || r.frozen()) return -1;  // a frozen region's table must not change
  uint32_t run = 0;
  for (uint32_t u = r.search_from_; u < r.units_; ++u) {
    const bool free = BlockState::Decode(LoadBlockWord(r.base(), u)).kind == BlockKind::kFree;
    run = free ? run + 1 : 0;
    if (run == n) return u + 1 - n;
  }
  return -1;
}

LocalRegion* BlockAllocator::ChooseRegion(uint32_t units, const BlockPlace& place) const {
  switch (place.kind) {
    case BlockPlace::Kind::kRegion: {
      auto it = by_id_.find(place.region);
      return it != by_id_.end() && FindFreeRun(*it->second, units) >= 0 ? it->second : nullptr;
    }
    case BlockPlace::Kind::kNear: {
      LocalRegion* best = nullptr;
      uint64_t best_distance = std::numeric_limits<uint64_t>::max();
      for (const auto& r : regions_) {
        if (r->ring_ != place.ring || FindFreeRun(*r, units) < 0) continue;
        const uint64_t d = r->position_ > place.position ? r->position_ - place.position
                                                          : place.position - r->position_;
        if (d < best_distance) {
          best = r.get();
          best_distance = d;
        }
      }
      return best;
    }
    case BlockPlace::Kind::kAnywhere:
      // The newest region with room: blocks fill regions one at a time.
      for (auto it = regions_.rbegin(); it != regions_.rend(); ++it) {
        if (FindFreeRun(**it, units) >= 0) return it->get();
      }
      return nullptr;
  }
  return nullptr;
}

absl::StatusOr<SlabBlock*> BlockAllocator::Acquire(SizeClass size_class, const BlockPlace& place,
                                                   BlockTableUpdate* update) {
  const uint32_t units = ClassInfo(size_class).block_units;
  MutexLock lock(&mu_);
  if (place.kind == BlockPlace::Kind::kRegion && !by_id_.contains(place.region)) {
    return absl::NotFoundError(absl::StrFormat("this node holds no region %d", place.region));
  }
  LocalRegion* r = ChooseRegion(units, place);
  if (r == nullptr) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "no free run of %d MiB for size class %d (%d-byte slots)%s", units, size_class,
        ClassInfo(size_class).slot_bytes,
        place.kind == BlockPlace::Kind::kRegion ? absl::StrFormat(" in region %d", place.region) : ""));
  }
  const int64_t first = FindFreeRun(*r, units);
  return Carve(r, static_cast<uint32_t>(first), size_class, update);
}

bool BlockAllocator::HasRoom(RegionId region, SizeClass size_class) const {
  MutexLock lock(&mu_);
  auto it = by_id_.find(region);
  return it != by_id_.end() && FindFreeRun(*it->second, ClassInfo(size_class).block_units) >= 0;
}

SlabBlock* BlockAllocator::Carve(LocalRegion* r, uint32_t first, SizeClass size_class,
                                 BlockTableUpdate* update) {
  const uint32_t units = ClassInfo(size_class).block_units;
  update->region = r->id();
  update->first_unit = first;
  update->words.clear();
  // Every unit of the block takes one generation, newer than any of theirs.
  uint64_t newest = 0;
  for (uint32_t i = 0; i < units; ++i) {
    newest = std::max(newest, BlockState::Decode(LoadBlockWord(r->base(), first + i)).generation);
  }
  const uint64_t generation = newest + 1;
  for (uint32_t i = 0; i < units; ++i) {
    BlockState now;
    now.kind = i == 0 ? BlockKind::kSlab : BlockKind::kContinuation;
    now.size_class = i == 0 ? size_class : 0;
    now.units = i == 0 ? units : i;
    now.generation = generation;
    update->words.push_back(now.Encode());
  }
  if (newest != 0) ClearSlotHeaders(r->base(), first, size_class, generation);
  for (uint32_t i = 0; i < units; ++i) StoreBlockWord(r->base(), first + i, update->words[i]);
  auto block = std::make_unique<SlabBlock>(r, first, size_class,
                                           BlockState::Decode(update->words[0]).generation);
  SlabBlock* raw = block.get();
  r->owned_[first] = std::move(block);
  r->free_units_ -= units;
  if (first == r->search_from_) r->search_from_ = first + units;
  return raw;
}

SlabBlock* BlockAllocator::Adopt(SizeClass size_class, const BlockPlace& place,
                                 ThreadAllocator* owner) {
  MutexLock lock(&mu_);
  std::vector<SlabBlock*>& list = adoptable_[size_class];
  for (size_t i = 0; i < list.size(); ++i) {
    SlabBlock* b = list[i];
    if (b->region()->leaving()) continue;  // handed over: never used again here
    if (place.kind == BlockPlace::Kind::kRegion && b->region()->id() != place.region) continue;
    if (place.kind == BlockPlace::Kind::kNear && b->region()->ring() != place.ring) continue;
    list[i] = list.back();
    list.pop_back();
    b->set_owner(owner);
    return b;
  }
  return nullptr;
}

void BlockAllocator::SetPublished(SlabBlock* block, bool published) {
  LocalRegion* r = block->region();
  SlabBlock* value = published ? block : nullptr;
  for (uint32_t i = 0; i < ClassInfo(block->size_class()).block_units; ++i) {
    r->blocks_[block->first_unit() + i].store(value, std::memory_order_release);
  }
}

void BlockAllocator::Publish(SlabBlock* block) {
  MutexLock lock(&mu_);
  SetPublished(block, true);
}

void BlockAllocator::Unpublish(SlabBlock* block) {
  MutexLock lock(&mu_);
  SetPublished(block, false);
}

void BlockAllocator::Abandon(SlabBlock* block) {
  MutexLock lock(&mu_);
  SetPublished(block, true);
  block->set_owner(nullptr);
  block->next = block->prev = nullptr;
  adoptable_[block->size_class()].push_back(block);
}

void BlockAllocator::Release(SlabBlock* block, BlockTableUpdate* update) {
  MutexLock lock(&mu_);
  LocalRegion* r = block->region();
  const uint32_t first = block->first_unit();
  const uint32_t units = ClassInfo(block->size_class()).block_units;
  update->region = r->id();
  update->first_unit = first;
  update->words.clear();
  for (uint32_t i = 0; i < units; ++i) {
    BlockState s = BlockState::Decode(LoadBlockWord(r->base(), first + i));
    s.kind = BlockKind::kFree;
    s.size_class = 0;
    s.units = 0;
    update->words.push_back(s.Encode());
    StoreBlockWord(r->base(), first + i, update->words.back());
  }
  SetPublished(block, false);
  r->free_units_ += units;
  r->search_from_ = std::min(r->search_from_, first);
  r->owned_.erase(first);  // deletes the SlabBlock
}

absl::Status BlockAllocator::AdoptScanned(RegionId region, const std::vector<uint32_t>& firsts,
                                          const std::vector<std::vector<uint32_t>>& live) {
  MutexLock lock(&mu_);
  auto it = by_id_.find(region);
  if (it == by_id_.end()) {
    return absl::NotFoundError(absl::StrFormat("region %d was not added before its scan", region));
  }
  LocalRegion* r = it->second;
  for (size_t i = 0; i < firsts.size(); ++i) {
    const BlockState s = BlockState::Decode(LoadBlockWord(r->base(), firsts[i]));
    if (s.kind != BlockKind::kSlab) {
      return absl::InvalidArgumentError(
          absl::StrFormat("unit %d of region %d is not a slab block", firsts[i], region));
    }
    auto block = std::make_unique<SlabBlock>(r, firsts[i], s.size_class, s.generation);
    block->ResetFromScan(live[i]);
    SlabBlock* raw = block.get();
    r->owned_[firsts[i]] = std::move(block);
    for (uint32_t u = 0; u < s.units; ++u) r->blocks_[firsts[i] + u].store(raw, std::memory_order_release);
    adoptable_[s.size_class].push_back(raw);
  }
  return absl::OkStatus();
}

BlockAllocatorStats BlockAllocator::Stats() const {
  MutexLock lock(&mu_);
  BlockAllocatorStats s;
  s.regions = static_cast<uint32_t>(regions_.size());
  for (const auto& r : regions_) {
    s.units += r->units_;
    s.free_units += r->free_units_;
    s.blocks += r->owned_.size();
  }
  for (const auto& list : adoptable_) s.adoptable += list.size();
  return s;
}

}  // namespace farm::alloc
