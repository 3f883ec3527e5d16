// SlabBlock: the node-private state of one slab block (a block of one size class in a
// region this node is primary of). The block's memory and its block-table entry live in
// the region; this is what the allocator keeps beside them, rebuilt by scanning after a
// restart (scan.h).
//
// Ownership: a block belongs to at most one ThreadAllocator (its owner), which alone
// allocates from it, so allocation takes no lock and no atomic read-modify-write:
//   local_free  bitmap of free slots, owner only (bit set = free), with a summary
//               bitmap of its non-zero words;
//   remote_free bitmap of slots freed by other threads (fetch_or), which the owner
//               merges into local_free when it runs short (CollectRemoteFrees);
//   remote_pending  a hint that remote_free has bits (set after the fetch_or).
// A slot is in local_free or remote_free (or neither: allocated), never both. `live`
// counts allocated slots from the owner's point of view: it may be above the truth
// while remote frees are uncollected, never below.
// A block without owner (its thread allocator was destroyed, or the block was rebuilt
// by a scan) waits in the block allocator's adoptable list; frees to it go to
// remote_free.
#ifndef FARM_ALLOC_SLAB_BLOCK_H_
#define FARM_ALLOC_SLAB_BLOCK_H_

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "alloc/size_classes.h"
#include "farm/base/address.h"

namespace farm::alloc {

class ThreadAllocator;
class LocalRegion;

class SlabBlock {
 public:
  SlabBlock(LocalRegion* region, uint32_t first_unit, SizeClass size_class, uint64_t generation);
  SlabBlock(const SlabBlock&) = delete;
  SlabBlock& operator=(const SlabBlock&) = delete;

  LocalRegion* region() const { return region_; }
  uint32_t first_unit() const { return first_unit_; }
  SizeClass size_class() const { return size_class_; }
  uint32_t slot_bytes() const { return slot_bytes_; }
  uint32_t slots() const { return slots_; }
  uint64_t generation() const { return generation_; }
  // Region offset of the block's first byte / of slot `i`.
  uint64_t offset() const { return offset_; }
  uint64_t SlotOffset(uint32_t i) const { return offset_ + uint64_t{i} * slot_bytes_; }
  // The slot starting at region offset `offset`, or -1 when no slot starts there.
  int64_t SlotAt(uint64_t offset) const;

  // --- Owner thread ---
  // Takes a free slot (lowest first); -1 when the local bitmap is empty.
  int64_t TakeLocal();
  // Returns a slot the owner freed.
  void FreeLocal(uint32_t slot);
  // Moves remotely freed slots into the local bitmap; returns how many.
  uint32_t CollectRemoteFrees();
  bool HasLocalFree() const { return local_free_count_ > 0; }
  uint32_t live() const { return live_; }
  // Marks every slot allocated or free as the scan found them (before any owner).
  void ResetFromScan(const std::vector<uint32_t>& live_slots);

  // --- Any thread ---
  // Returns a slot freed by a thread that does not own the block.
  void FreeRemote(uint32_t slot);
  bool remote_pending() const { return remote_pending_.load(std::memory_order_acquire); }
  ThreadAllocator* owner() const { return owner_.load(std::memory_order_acquire); }
  void set_owner(ThreadAllocator* owner) { owner_.store(owner, std::memory_order_release); }

  // Intrusive links for the owner's per-class list (owner thread, or the block
  // allocator under its lock while the block has no owner).
  SlabBlock* next = nullptr;
  SlabBlock* prev = nullptr;
  enum class List : uint8_t { kNone, kAvailable, kFull };
  List list = List::kNone;
  bool retired = false;

 private:
  static constexpr uint32_t kBits = 64;
  uint32_t words() const { return (slots_ + kBits - 1) / kBits; }

  LocalRegion* const region_;
  const uint32_t first_unit_;
  const SizeClass size_class_;
  const uint32_t slot_bytes_;
  const uint32_t slots_;
  const uint64_t offset_;
  const uint64_t generation_;
  std::atomic<ThreadAllocator*> owner_{nullptr};

  uint32_t summary_words() const { return (words() + kBits - 1) / kBits; }
  void MarkWord(uint32_t w) { summary_[w / kBits] |= uint64_t{1} << (w % kBits); }

  std::unique_ptr<uint64_t[]> local_free_;
  // Bit w set exactly when local_free_[w] != 0: finding a free slot is two bit scans.
  std::unique_ptr<uint64_t[]> summary_;
  uint32_t local_free_count_ = 0;
  uint32_t live_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> remote_free_;
  std::atomic<bool> remote_pending_{false};
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_SLAB_BLOCK_H_
