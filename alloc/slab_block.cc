#include "alloc/slab_block.h"

#include <vector>

#include "alloc/region_format.h"

namespace farm::alloc {

SlabBlock::SlabBlock(LocalRegion* region, uint32_t first_unit, SizeClass size_class,
                     uint64_t generation)
    : region_(region),
      first_unit_(first_unit),
      size_class_(size_class),
      slot_bytes_(ClassInfo(size_class).slot_bytes),
      slots_(ClassInfo(size_class).slots),
      offset_(uint64_t{first_unit} * kBlockUnitBytes),
      generation_(generation),
      local_free_(new uint64_t[words()]),
      summary_(new uint64_t[summary_words()]()),
      local_free_count_(slots_),
      remote_free_(new std::atomic<uint64_t>[words()]) {
  for (uint32_t w = 0; w < words(); ++w) {
    const uint32_t bits_here = std::min(kBits, slots_ - w * kBits);
    local_free_[w] = bits_here == kBits ? ~uint64_t{0} : (uint64_t{1} << bits_here) - 1;
    MarkWord(w);
    remote_free_[w].store(0, std::memory_order_relaxed);
  }
}

int64_t SlabBlock::SlotAt(uint64_t offset) const {
  if (offset < offset_) return -1;
  const uint64_t delta = offset - offset_;
  if (delta % slot_bytes_ != 0) return -1;
  const uint64_t slot = delta / slot_bytes_;
  return slot < slots_ ? static_cast<int64_t>(slot) : -1;
}

int64_t SlabBlock::TakeLocal() {
  if (local_free_count_ == 0) return -1;
  for (uint32_t s = 0; s < summary_words(); ++s) {
    if (summary_[s] == 0) continue;
    const uint32_t w = s * kBits + static_cast<uint32_t>(std::countr_zero(summary_[s]));
    const uint32_t bit = static_cast<uint32_t>(std::countr_zero(local_free_[w]));
    local_free_[w] &= local_free_[w] - 1;
    if (local_free_[w] == 0) summary_[s] &= summary_[s] - 1;  // w was the lowest set bit
    --local_free_count_;
    ++live_;
    return int64_t{w} * kBits + bit;
  }
  return -1;  // unreachable while local_free_count_ is right
}

void SlabBlock::FreeLocal(uint32_t slot) {
  const uint32_t w = slot / kBits;
  local_free_[w] |= uint64_t{1} << (slot % kBits);
  MarkWord(w);
  ++local_free_count_;
  --live_;
}

void SlabBlock::FreeRemote(uint32_t slot) {
  remote_free_[slot / kBits].fetch_or(uint64_t{1} << (slot % kBits), std::memory_order_release);
  remote_pending_.store(true, std::memory_order_release);
}

uint32_t SlabBlock::CollectRemoteFrees() {
  if (!remote_pending_.exchange(false, std::memory_order_acq_rel)) return 0;
  uint32_t collected = 0;
  for (uint32_t w = 0; w < words(); ++w) {
    if (remote_free_[w].load(std::memory_order_relaxed) == 0) continue;
    const uint64_t bits = remote_free_[w].exchange(0, std::memory_order_acquire);
    if (bits == 0) continue;
    local_free_[w] |= bits;
    MarkWord(w);
    collected += static_cast<uint32_t>(std::popcount(bits));
  }
  local_free_count_ += collected;
  live_ -= collected;
  return collected;
}

void SlabBlock::ResetFromScan(const std::vector<uint32_t>& live_slots) {
  for (uint32_t slot : live_slots) {
    local_free_[slot / kBits] &= ~(uint64_t{1} << (slot % kBits));
  }
  for (uint32_t s = 0; s < summary_words(); ++s) summary_[s] = 0;
  for (uint32_t w = 0; w < words(); ++w) {
    if (local_free_[w] != 0) MarkWord(w);
  }
  local_free_count_ = slots_ - static_cast<uint32_t>(live_slots.size());
  live_ = static_cast<uint32_t>(live_slots.size());
}

}  // namespace farm::alloc
