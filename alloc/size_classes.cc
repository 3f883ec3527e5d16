#include "alloc/size_classes.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "farm/base/object_layout.h"

namespace farm::alloc {
namespace {

// Slot sizes grown by ratio 1/(1 - f) (see the header); `count` receives how many
// classes reaching 1 MiB takes, the table holds the first kSizeClassCount.
constexpr std::array<uint32_t, kSizeClassCount> GrowClasses(double f, uint32_t& count) {
  std::array<uint32_t, kSizeClassCount> slots{};
  uint64_t slot = kMinSlotBytes;
  count = 0;
  while (true) {
    if (count < kSizeClassCount) slots[count] = static_cast<uint32_t>(slot);
    ++count;
    if (slot >= kMaxSlotBytes) break;
    const uint64_t grown = static_cast<uint64_t>(static_cast<double>(slot) / (1.0 - f)) /
                           kObjectAlignment * kObjectAlignment;
    slot = std::min(std::max(slot + kObjectAlignment, grown), kMaxSlotBytes);
  }
  return slots;
}

constexpr std::array<uint32_t, kSizeClassCount> MakeSlotSizes() {
  // Bisect for the smallest f that reaches 1 MiB within kSizeClassCount classes.
  double low = 0.0, high = 0.25;
  for (int i = 0; i < 60; ++i) {
    const double mid = (low + high) / 2;
    uint32_t count = 0;
    GrowClasses(mid, count);
    (count <= kSizeClassCount ? high : low) = mid;
  }
  uint32_t count = 0;
  std::array<uint32_t, kSizeClassCount> slots = GrowClasses(high, count);
  // Fewer classes than the table holds would leave zeros; the bisection finds exactly
  // kSizeClassCount for this range (checked below).
  return slots;
}

constexpr std::array<uint32_t, kSizeClassCount> kSlotSizes = MakeSlotSizes();
static_assert(kSlotSizes[0] == kMinSlotBytes);
static_assert(kSlotSizes[kSizeClassCount - 1] == kMaxSlotBytes);

constexpr bool Ascending16(const std::array<uint32_t, kSizeClassCount>& s) {
  for (uint32_t i = 1; i < s.size(); ++i) {
    if (s[i] <= s[i - 1] || s[i] % kObjectAlignment != 0) return false;
  }
  return true;
}
static_assert(Ascending16(kSlotSizes));

constexpr SizeClassInfo MakeInfo(uint32_t slot) {
  SizeClassInfo best{slot, 0, 0};
  uint64_t best_tail = ~uint64_t{0};
  for (uint32_t units = 1; units <= kMaxBlockUnits; ++units) {
    const uint64_t block = units * kBlockUnitBytes;
    const uint64_t slots = block / slot;
    const uint64_t tail = block - slots * slot;
    if (slots == 0) continue;
    if (tail * 64 <= block) return SizeClassInfo{slot, units, static_cast<uint32_t>(slots)};
    // Compare tails as fractions of their blocks.
    if (best.block_units == 0 || tail * best.block_units * kBlockUnitBytes < best_tail * block) {
      best = SizeClassInfo{slot, units, static_cast<uint32_t>(slots)};
      best_tail = tail;
    }
  }
  return best;
}

constexpr std::array<SizeClassInfo, kSizeClassCount> MakeInfos() {
  std::array<SizeClassInfo, kSizeClassCount> infos{};
  for (uint32_t i = 0; i < kSizeClassCount; ++i) infos[i] = MakeInfo(kSlotSizes[i]);
  return infos;
}
constexpr std::array<SizeClassInfo, kSizeClassCount> kInfos = MakeInfos();

// Direct lookup for stored sizes up to kDirectBytes, in 16-byte steps.
constexpr uint64_t kDirectBytes = 8192;
constexpr std::array<SizeClass, kDirectBytes / kObjectAlignment + 1> MakeDirect() {
  std::array<SizeClass, kDirectBytes / kObjectAlignment + 1> direct{};
  uint32_t c = 0;
  for (uint64_t i = 0; i < direct.size(); ++i) {
    const uint64_t bytes = i * kObjectAlignment;
    while (kSlotSizes[c] < bytes) ++c;
    direct[i] = static_cast<SizeClass>(c);
  }
  return direct;
}
constexpr auto kDirect = MakeDirect();

// Direct lookup by payload up to kDirectPayload bytes (the allocation fast path).
constexpr uint64_t kDirectPayload = 4096;
constexpr std::array<SizeClass, kDirectPayload + 1> MakeDirectPayload() {
  std::array<SizeClass, kDirectPayload + 1> direct{};
  uint32_t c = 0;
  for (uint64_t p = 0; p <= kDirectPayload; ++p) {
    const uint64_t stored = MaxStoredBytes(p);
    while (kSlotSizes[c] < stored) ++c;
    direct[p] = static_cast<SizeClass>(c);
  }
  return direct;
}
constexpr auto kDirectPayloadClass = MakeDirectPayload();

constexpr uint64_t FnvOfSlots() {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint32_t s : kSlotSizes) {
    for (int b = 0; b < 4; ++b) {
      h ^= (s >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

}  // namespace

absl::StatusOr<SizeClass> ClassForStoredBytes(uint64_t stored_bytes) {
  if (stored_bytes <= kDirectBytes) {
    return kDirect[(stored_bytes + kObjectAlignment - 1) / kObjectAlignment];
  }
  if (stored_bytes > kMaxSlotBytes) {
    return absl::OutOfRangeError(absl::StrFormat(
        "an object of %d stored bytes is larger than the largest slot (%d bytes)", stored_bytes,
        kMaxSlotBytes));
  }
  const auto it = std::lower_bound(kSlotSizes.begin(), kSlotSizes.end(), stored_bytes);
  return static_cast<SizeClass>(it - kSlotSizes.begin());
}

absl::StatusOr<SizeClass> ClassForPayload(uint64_t payload) {
  if (payload <= kDirectPayload) return kDirectPayloadClass[payload];
  if (payload > MaxPayloadBytes()) {
    return absl::OutOfRangeError(absl::StrFormat(
        "an object of %d bytes is larger than the largest object a block holds (%d bytes)",
        payload, MaxPayloadBytes()));
  }
  return ClassForStoredBytes(MaxStoredBytes(payload));
}

uint64_t MaxPayloadBytes() {
  // MaxStoredBytes grows with the payload: bisect for the largest payload that fits.
  static const uint64_t max_payload = [] {
    uint64_t fits = 0, too_big = kMaxSlotBytes;
    while (too_big - fits > 1) {
      const uint64_t mid = fits + (too_big - fits) / 2;
      (MaxStoredBytes(mid) <= kMaxSlotBytes ? fits : too_big) = mid;
    }
    return fits;
  }();
  return max_payload;
}

const SizeClassInfo& ClassInfo(SizeClass c) { return kInfos[c]; }
const std::array<uint32_t, kSizeClassCount>& SlotSizes() { return kSlotSizes; }
uint64_t SizeClassTableId() { return FnvOfSlots(); }

Fragmentation FragmentationOver(uint64_t low, uint64_t high) {
  Fragmentation f;
  double sum = 0;
  for (uint32_t c = 0; c < kSizeClassCount; ++c) {
    const uint64_t slot = kSlotSizes[c];
    const uint64_t first = std::max<uint64_t>(c == 0 ? 1 : kSlotSizes[c - 1] + 1, low);
    const uint64_t last = std::min<uint64_t>(slot, high);
    if (first > last) continue;
    // Sum of (slot - s) / slot for s in [first, last], in closed form.
    const double n = static_cast<double>(last - first + 1);
    const double sizes = (static_cast<double>(first) + static_cast<double>(last)) * n / 2;
    sum += (n * static_cast<double>(slot) - sizes) / static_cast<double>(slot);
    const double worst = static_cast<double>(slot - first) / static_cast<double>(slot);
    if (worst > f.maximum) {
      f.maximum = worst;
      f.worst_size = first;
    }
  }
  f.average = sum / static_cast<double>(high - low + 1);
  return f;
}

}  // namespace farm::alloc
