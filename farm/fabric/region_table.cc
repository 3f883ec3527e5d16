#include "farm/fabric/region_table.h"

#include <sodium.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace farm {
namespace {

template <typename T>
T Load(const T& field, std::memory_order order) {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(order);
}
template <typename T>
void Store(T& field, T value, std::memory_order order) {
  std::atomic_ref<T>(field).store(value, order);
}

uint64_t NewRkey(uint32_t slot) {
  uint64_t random = 0;
  while ((random & ~uint64_t{0xFFFF}) == 0) randombytes_buf(&random, sizeof(random));
  return (random & ~uint64_t{0xFFFF}) | slot;
}

// Invariant 2, reader side. `bases` (process-local, may be null for a remote table) is
// read between the two rkey loads, like the shared fields.
struct SlotView {
  uint64_t length = 0;  // 0: not valid
  char* base = nullptr;
};
SlotView ReadSlot(const SharedRegionSlot* slots, const std::atomic<char*>* bases,
                  uint32_t capacity, RegionId region, uint64_t rkey) {
  const uint32_t index = RkeySlot(rkey);
  if (rkey == 0 || index >= capacity) return {};
  const SharedRegionSlot& slot = slots[index];
  if (Load(slot.rkey, std::memory_order_acquire) != rkey) return {};
  SlotView view;
  const uint32_t slot_region = Load(slot.region, std::memory_order_relaxed);
  view.length = Load(slot.length, std::memory_order_relaxed);
  if (bases != nullptr) view.base = bases[index].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (Load(slot.rkey, std::memory_order_relaxed) != rkey || slot_region != region) return {};
  return view;
}

}  // namespace

uint64_t ValidateRkey(const SharedRegionSlot* slots, uint32_t capacity, RegionId region,
                      uint64_t rkey) {
  return ReadSlot(slots, nullptr, capacity, region, rkey).length;
}

absl::StatusOr<std::unique_ptr<RegionTable>> RegionTable::Create(uint32_t capacity) {
  if (capacity == 0 || capacity > kMaxRegionSlots) {
    return absl::InvalidArgumentError(
        absl::StrFormat("region table capacity %u must be in [1, %u]", capacity, kMaxRegionSlots));
  }
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t bytes = (capacity * sizeof(SharedRegionSlot) + page - 1) / page * page;
  absl::StatusOr<Region> shared = Region::Create(kNullRegion, bytes, {HugePages::kNone});
  if (!shared.ok()) return shared.status();
  return std::unique_ptr<RegionTable>(new RegionTable(std::move(*shared), capacity));
}

RegionTable::RegionTable(Region shared, uint32_t capacity)
    : shared_(std::move(shared)), capacity_(capacity), bases_(new std::atomic<char*>[capacity]) {
  for (uint32_t i = capacity; i > 0; --i) {
    bases_[i - 1].store(nullptr, std::memory_order_relaxed);
    free_slots_.push_back(i - 1);  // hand out low slots first
  }
}

absl::StatusOr<RegisteredRegion> RegionTable::Register(const Region& region) {
  MutexLock lock(&mu_);
  for (uint32_t i = 0; i < capacity_; ++i) {
    if (Load(slots()[i].rkey, std::memory_order_relaxed) != 0 &&
        Load(slots()[i].region, std::memory_order_relaxed) == region.id()) {
      return absl::AlreadyExistsError(absl::StrFormat("region %u is already registered", region.id()));
    }
  }
  if (free_slots_.empty()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot register region %u: all %u slots in use (FabricOptions::max_regions)", region.id(),
        capacity_));
  }
  const uint32_t index = free_slots_.back();
  free_slots_.pop_back();
  SharedRegionSlot& slot = slots()[index];
  // Release stores throughout: a reader that sees any of these values, then fences,
  // also sees the rkey 0 stored by an earlier deregistration of the slot.
  Store(slot.region, region.id(), std::memory_order_release);
  Store(slot.length, region.size(), std::memory_order_release);
  bases_[index].store(region.base(), std::memory_order_release);
  const uint64_t rkey = NewRkey(index);
  Store(slot.rkey, rkey, std::memory_order_release);  // invariant 2: publish last

  RegisteredRegion out;
  out.local = LocalRegion{region.id(), index, region.base(), region.size()};
  out.capability = RegionCapability{region.id(), 0, region.size(), rkey, 0};
  return out;
}

absl::Status RegionTable::Deregister(RegionId region) {
  MutexLock lock(&mu_);
  for (uint32_t i = 0; i < capacity_; ++i) {
    SharedRegionSlot& slot = slots()[i];
    if (Load(slot.rkey, std::memory_order_relaxed) != 0 &&
        Load(slot.region, std::memory_order_relaxed) == region) {
      Store(slot.rkey, uint64_t{0}, std::memory_order_release);
      bases_[i].store(nullptr, std::memory_order_release);
      free_slots_.push_back(i);
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(absl::StrFormat("region %u is not registered", region));
}

char* RegionTable::Resolve(RegionId region, uint64_t rkey, uint64_t offset,
                           uint64_t length) const {
  const SlotView view = ReadSlot(slots(), bases_.get(), capacity_, region, rkey);
  if (view.length == 0 || view.base == nullptr || offset > view.length ||
      length > view.length - offset) {
    return nullptr;
  }
  return view.base + offset;
}

bool RegionTable::CheckLocal(uint32_t lkey, const void* addr, uint64_t length) const {
  if (lkey >= capacity_) return false;
  const char* base = bases_[lkey].load(std::memory_order_acquire);
  const uint64_t size = Load(slots()[lkey].length, std::memory_order_relaxed);
  const char* p = static_cast<const char*>(addr);
  return base != nullptr && p >= base && static_cast<uint64_t>(p - base) <= size &&
         length <= size - static_cast<uint64_t>(p - base);
}

}  // namespace farm
