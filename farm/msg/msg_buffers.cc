#include "farm/msg/msg_buffers.h"

#include "absl/strings/str_format.h"
#include "farm/base/cpu_copy.h"

namespace farm {

absl::StatusOr<std::unique_ptr<MsgBuffers>> MsgBuffers::Create(Fabric* fabric, RegionId id,
                                                               uint32_t ring_bytes,
                                                               uint32_t max_rings) {
  if (ring_bytes < (16u << 10) || ring_bytes > (64u << 20) || ring_bytes % 4096 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ring size %u must be a multiple of 4096 in [16 KiB, 64 MiB]", ring_bytes));
  }
  if (max_rings == 0) return absl::InvalidArgumentError("max_rings must be > 0");
  const uint64_t words = uint64_t{2} * max_rings * kWordBytes;
  const uint64_t bytes = uint64_t{2} * max_rings * ring_bytes + ((words + 4095) & ~uint64_t{4095});
  if (bytes > kMaxRegionSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u rings of %u bytes need %u bytes, over one region's %u", max_rings, ring_bytes, bytes,
        kMaxRegionSize));
  }
  absl::StatusOr<Region> region = Region::Create(id, bytes, {HugePages::kNone});
  if (!region.ok()) return region.status();
  std::unique_ptr<MsgBuffers> buffers(
      new MsgBuffers(fabric, std::move(*region), ring_bytes, max_rings));
  absl::StatusOr<RegisteredRegion> registered = fabric->RegisterRegion(buffers->region_);
  if (!registered.ok()) return registered.status();
  buffers->registered_ = *registered;
  return buffers;
}

MsgBuffers::MsgBuffers(Fabric* fabric, Region region, uint32_t ring_bytes, uint32_t max_rings)
    : fabric_(fabric), region_(std::move(region)), ring_bytes_(ring_bytes) {
  MutexLock lock(&mu_);
  const uint64_t counts[3] = {max_rings, max_rings, uint64_t{2} * max_rings};
  const uint64_t sizes[3] = {ring_bytes, ring_bytes, kWordBytes};
  uint64_t base = 0;
  for (int k = 0; k < 3; ++k) {
    Pool& p = pools_[k];
    p.base = base;
    p.slot_bytes = sizes[k];
    for (uint64_t i = counts[k]; i > 0; --i) p.free.push_back(base + (i - 1) * sizes[k]);
    base += counts[k] * sizes[k];
  }
}

MsgBuffers::~MsgBuffers() {
  if (registered_.capability.rkey != 0) (void)fabric_->DeregisterRegion(region_.id());
}

absl::StatusOr<uint64_t> MsgBuffers::Allocate(Kind kind) {
  MutexLock lock(&mu_);
  Pool& p = pool(kind);
  if (p.free.empty()) {
    static constexpr const char* kNames[] = {"incoming rings", "staging buffers", "ring words"};
    return absl::ResourceExhaustedError(absl::StrFormat(
        "all messaging %s are in use (MessengerOptions::max_rings)", kNames[static_cast<int>(kind)]));
  }
  const uint64_t offset = p.free.back();
  p.free.pop_back();
  return offset;
}

void MsgBuffers::Free(Kind kind, uint64_t offset) {
  if (kind == Kind::kWord) {
    ZeroShared(at(offset), kWordBytes);
    PublishZeroes();
  } else if (fabric_->PinsRegisteredMemory()) {
    // The device holds these pages: zero them in place (invariant).
    ZeroShared(at(offset), ring_bytes_);
    PublishZeroes();
  } else {
    // Zeroes the slot (invariant) and gives its memory back to the OS.
    (void)region_.Discard(offset, ring_bytes_);
  }
  MutexLock lock(&mu_);
  pool(kind).free.push_back(offset);
}

}  // namespace farm
