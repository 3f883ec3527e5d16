// CPU implementations of one-sided memory operations with the semantics an RDMA NIC
// gives, for the fabric backends that execute ops with a CPU (shm, tcp).
//
// Invariants these functions provide (DESIGN.md, "Semantics every backend must honour"):
//   1. OrderedStoreCopy makes the bytes it writes visible in increasing address order: an
//      observer that sees a byte of the copy (with an acquire load) also sees every byte
//      at a lower address of the same copy. The ring buffers rely on this to detect a
//      whole message by its trailer. memcpy gives no such promise (it may copy backwards
//      or use non-temporal stores), so the copy is done with release stores, in order.
//   2. ReadWithTornCheck copies a range that other threads or processes may be writing
//      and reports whether the range's first 8 bytes changed while it copied, or any
//      8-byte word of the copy differs from a second read after it (so a range holding
//      several objects is checked for each object's header). A CPU copy
//      is not atomic per cache line as a NIC's is; the object layer treats a change of
//      the header word as a torn read and retries. The first 8 bytes of the output are
//      the value loaded before the copy, so the reported header is the one checked.
//   3. The 8-byte atomics are atomic with respect to every CPU access on any process
//      mapping the memory (stronger than IBV_ATOMIC_HCA).
//
// Stores to shared memory are atomic release stores, in order (never memcpy: its
// fast-string and non-temporal stores may become visible out of order). The body of a
// torn-checked read is a plain memcpy between an acquire load and an acquire fence, the
// classic seqlock reader: x86-64 and AArch64 keep its loads inside that bracket, and
// the head check rejects what a racing writer changed. Under ThreadSanitizer the body is
// copied with atomic loads instead, so TSan sees no race. Memory passed as `shared` may
// be concurrently accessed; `local` must not be.
#ifndef FARM_BASE_CPU_COPY_H_
#define FARM_BASE_CPU_COPY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace farm {

// Copies `length` bytes from private `local` to `shared`, in increasing address order,
// each store a release store (invariant 1).
void OrderedStoreCopy(void* shared, const void* local, size_t length);

// Copies `length` bytes from `shared` to private `local`. Returns true when the first
// min(8, length) bytes of `shared` changed during the copy (invariant 2).
bool ReadWithTornCheck(void* local, const void* shared, size_t length);

// Zeroes `length` bytes of `shared` with stores in no particular order and no fence:
// before publishing that the memory is zero (to another thread or process), the caller
// issues PublishZeroes (once for any number of ZeroShared calls).
void ZeroShared(void* shared, size_t length);
// Makes every earlier ZeroShared of this thread visible before its later stores.
inline void PublishZeroes() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// 8-byte atomics on shared memory; `word` must be 8-byte aligned. Both return the value
// the word held before the operation.
inline uint64_t AtomicCompareSwap(void* word, uint64_t expected, uint64_t desired) {
  std::atomic_ref<uint64_t> ref(*static_cast<uint64_t*>(word));
  ref.compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                              std::memory_order_acquire);
  return expected;
}
inline uint64_t AtomicFetchAdd(void* word, uint64_t add) {
  return std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(word))
      .fetch_add(add, std::memory_order_acq_rel);
}

// Atomic loads and stores of an aligned 8-byte word in shared memory.
inline uint64_t LoadWordAcquire(const void* word) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(static_cast<const uint64_t*>(word)))
      .load(std::memory_order_acquire);
}
inline void StoreWordRelease(void* word, uint64_t value) {
  std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(word)).store(value, std::memory_order_release);
}

}  // namespace farm

#endif  // FARM_BASE_CPU_COPY_H_
