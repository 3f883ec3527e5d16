#include "alloc/backup_regions.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "alloc/region_format.h"

namespace farm::alloc {

namespace {

absl::Status CheckCopySize(RegionId region, uint64_t bytes) {
  if (bytes < kMinRegionBytes || bytes > kMaxRegionSize || bytes % kBlockUnitBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a backup of region %d cannot have %d bytes", region, bytes));
  }
  return absl::OkStatus();
}

// A new, formatted copy of `region`.
absl::StatusOr<std::unique_ptr<Region>> NewCopy(RegionId region, uint64_t bytes,
                                                const RegionOptions& options) {
  absl::StatusOr<Region> copy = Region::Create(region, bytes, options);
  if (!copy.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot hold a backup of region ", region, ": ",
                                                     copy.status().message()));
  }
  auto held = std::make_unique<Region>(std::move(*copy));
  if (absl::Status s = FormatRegion(held->base(), region, bytes); !s.ok()) return s;
  return held;
}

}  // namespace

absl::Status BackupRegions::Create(RegionId region, uint64_t bytes, NodeId primary) {
  if (absl::Status s = CheckCopySize(region, bytes); !s.ok()) return s;
  MutexLock lock(&mu_);
  if (auto it = copies_.find(region); it != copies_.end()) {
    if (it->second.region->size() == bytes && it->second.primary == primary) return absl::OkStatus();
    return absl::AlreadyExistsError(absl::StrFormat(
        "a backup of region %d (%d bytes, created by node %d) is held already; node %d asked for "
        "%d bytes", region, it->second.region->size(), it->second.primary, primary, bytes));
  }
  absl::StatusOr<std::unique_ptr<Region>> held = NewCopy(region, bytes, options_);
  if (!held.ok()) return held.status();
  Hold(region, Copy{std::move(*held), primary});
  return absl::OkStatus();
}

absl::Status BackupRegions::Reset(RegionId region, uint64_t bytes, NodeId primary) {
  if (absl::Status s = CheckCopySize(region, bytes); !s.ok()) return s;
  MutexLock lock(&mu_);
  auto it = copies_.find(region);
  if (it == copies_.end()) {
    absl::StatusOr<std::unique_ptr<Region>> held = NewCopy(region, bytes, options_);
    if (!held.ok()) return held.status();
    Hold(region, Copy{std::move(*held), primary});
    return absl::OkStatus();
  }
  Copy& held = it->second;
  if (held.region->size() != bytes) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot reset the backup of region %d to %d bytes: the copy held has %d", region, bytes,
        held.region->size()));
  }
  if (absl::Status s = held.region->Discard(0, bytes); !s.ok()) {
    return absl::InternalError(absl::StrCat("zeroing the backup of region ", region, ": ", s.message()));
  }
  held.primary = primary;
  return FormatRegion(held.region->base(), region, bytes);
}

absl::Status BackupRegions::WriteBytes(RegionId region, uint64_t offset, absl::string_view bytes) {
  MutexLock lock(&mu_);
  auto it = copies_.find(region);
  if (it == copies_.end()) {
    return absl::NotFoundError(absl::StrFormat("no backup of region %d is held here", region));
  }
  Region& copy = *it->second.region;
  if (!copy.Contains(offset, bytes.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d bytes at offset %d run past the %d-byte backup of region %d", bytes.size(), offset,
        copy.size(), region));
  }
  if (!bytes.empty()) std::memcpy(copy.base() + offset, bytes.data(), bytes.size());
  return absl::OkStatus();
}

void BackupRegions::FreeStaleBlock(char* base, uint32_t units, uint32_t unit, uint32_t skip_from,
                                   uint32_t skip_to) {
  const BlockState old = BlockState::Decode(LoadBlockWord(base, unit));
  uint32_t head = unit, length = 1;
  if (old.kind == BlockKind::kSlab) {
    length = old.units;
  } else if (old.kind == BlockKind::kContinuation && old.units <= unit) {
    const BlockState h = BlockState::Decode(LoadBlockWord(base, unit - old.units));
    if (h.kind == BlockKind::kSlab && h.generation == old.generation) {
      head = unit - old.units;
      length = h.units;
    }
  } else {
    return;  // free or metadata: nothing else to clean
  }
  for (uint32_t u = head; u < head + length && u < units; ++u) {
    if (u >= skip_from && u < skip_to) continue;  // rewritten by this update
    BlockState s = BlockState::Decode(LoadBlockWord(base, u));
    if (s.kind == BlockKind::kFree || s.generation != old.generation) continue;
    s.kind = BlockKind::kFree;
    s.size_class = 0;
    s.units = 0;
    StoreBlockWord(base, u, s.Encode());
  }
}

absl::Status BackupRegions::Apply(RegionId region, uint32_t first_unit,
                                  std::span<const uint64_t> words) {
  MutexLock lock(&mu_);
  auto it = copies_.find(region);
  if (it == copies_.end()) {
    return absl::NotFoundError(absl::StrFormat("no backup of region %d is held here", region));
  }
  Region& copy = *it->second.region;
  const uint32_t units = UnitsOf(copy.size());
  for (size_t i = 0; i < words.size(); ++i) {
    if (first_unit + i >= units) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "block-table update of region %d runs past its %d units", region, units));
    }
    if (absl::Status s = ValidateBlockWord(static_cast<uint32_t>(first_unit + i), words[i], units);
        !s.ok()) {
      return s;
    }
  }
  const uint32_t end_unit = first_unit + static_cast<uint32_t>(words.size());
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t unit = static_cast<uint32_t>(first_unit + i);
    const BlockState now = BlockState::Decode(LoadBlockWord(copy.base(), unit));
    const BlockState next = BlockState::Decode(words[i]);
    const bool newer = next.generation > now.generation ||
                       (next.generation == now.generation && next.kind == BlockKind::kFree);
    if (!newer) continue;
    if (next.generation > now.generation) FreeStaleBlock(copy.base(), units, unit, first_unit, end_unit);
    if (next.kind == BlockKind::kSlab && next.generation > 1 && next.generation != now.generation) {
      ClearSlotHeaders(copy.base(), unit, next.size_class, next.generation);
    }
    StoreBlockWord(copy.base(), unit, words[i]);
  }
  return absl::OkStatus();
}

void BackupRegions::Hold(RegionId region, Copy copy) {
  const Region* held = copy.region.get();
  copies_[region] = std::move(copy);
  found_.Update([&](auto& m) { m[region] = held; });
}

void BackupRegions::Forget(RegionId region) {
  copies_.erase(region);
  found_.Update([&](auto& m) { m.erase(region); });
}

const Region* BackupRegions::Find(RegionId region) const { return found_.Find(region); }

std::vector<RegionId> BackupRegions::Held() const {
  MutexLock lock(&mu_);
  std::vector<RegionId> ids;
  for (const auto& [id, copy] : copies_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

NodeId BackupRegions::CreatorOf(RegionId region) const {
  MutexLock lock(&mu_);
  auto it = copies_.find(region);
  return it == copies_.end() ? kInvalidNode : it->second.primary;
}

absl::Status BackupRegions::SetPrimary(RegionId region, NodeId primary) {
  MutexLock lock(&mu_);
  auto it = copies_.find(region);
  if (it == copies_.end()) return absl::NotFoundError(absl::StrFormat("no copy of region %d is held", region));
  it->second.primary = primary;
  return absl::OkStatus();
}

bool BackupRegions::Drop(RegionId region) {
  MutexLock lock(&mu_);
  auto it = copies_.find(region);
  if (it == copies_.end()) return false;
  dropped_.push_back(std::move(it->second.region));
  Forget(region);
  return true;
}

std::unique_ptr<Region> BackupRegions::Take(RegionId region) {
  MutexLock lock(&mu_);
  auto it = copies_.find(region);
  if (it == copies_.end()) return nullptr;
  std::unique_ptr<Region> taken = std::move(it->second.region);
  Forget(region);
  return taken;
}

}  // namespace farm::alloc
