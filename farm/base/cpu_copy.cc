#include "farm/base/cpu_copy.h"

#include <cstring>

namespace farm {
namespace {

bool Aligned8(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 7) == 0; }

// Shared memory is accessed only through atomic_ref. const_cast: atomic_ref<const T> is
// not available before C++26; the loads below never write.
uint8_t LoadByte(const void* p, std::memory_order order) {
  return std::atomic_ref<uint8_t>(*const_cast<uint8_t*>(static_cast<const uint8_t*>(p)))
      .load(order);
}
uint64_t LoadWord(const void* p, std::memory_order order) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(static_cast<const uint64_t*>(p)))
      .load(order);
}

// The first min(8, length) bytes at `shared`, as one atomic load when aligned.
uint64_t LoadHead(const void* shared, size_t length, std::memory_order order) {
  if (length >= 8 && Aligned8(shared)) return LoadWord(shared, order);
  uint64_t v = 0;
  const size_t n = length < 8 ? length : 8;
  for (size_t i = 0; i < n; ++i) {
    v |= static_cast<uint64_t>(LoadByte(static_cast<const uint8_t*>(shared) + i, order)) << (8 * i);
  }
  return v;
}

}  // namespace

void OrderedStoreCopy(void* shared, const void* local, size_t length) {
  auto* dst = static_cast<uint8_t*>(shared);
  const auto* src = static_cast<const uint8_t*>(local);
  while (length > 0 && !Aligned8(dst)) {
    std::atomic_ref<uint8_t>(*dst).store(*src, std::memory_order_release);
    ++dst, ++src, --length;
  }
  for (; length >= 8; dst += 8, src += 8, length -= 8) {
    uint64_t w;
    std::memcpy(&w, src, 8);
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(dst)).store(w, std::memory_order_release);
  }
  for (; length > 0; ++dst, ++src, --length) {
    std::atomic_ref<uint8_t>(*dst).store(*src, std::memory_order_release);
  }
}

void ZeroShared(void* shared, size_t length) {
#if defined(__SANITIZE_THREAD__)
  // Atomic stores, so ThreadSanitizer sees the publication through PublishZeroes and
  // the release store that follows it.
  auto* dst = static_cast<uint8_t*>(shared);
  while (length > 0 && !Aligned8(dst)) {
    std::atomic_ref<uint8_t>(*dst).store(0, std::memory_order_relaxed);
    ++dst, --length;
  }
  for (; length >= 8; dst += 8, length -= 8) {
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(dst)).store(0, std::memory_order_relaxed);
  }
  for (; length > 0; ++dst, --length) {
    std::atomic_ref<uint8_t>(*dst).store(0, std::memory_order_relaxed);
  }
#else
  std::memset(shared, 0, length);
#endif
}

// 8 bytes of shared memory, atomically per aligned word.
static uint64_t LoadRelaxed8(const uint8_t* p) {
  if (Aligned8(p)) return LoadWord(p, std::memory_order_relaxed);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(LoadByte(p + i, std::memory_order_relaxed)) << (8 * i);
  return v;
}

bool ReadWithTornCheck(void* local, const void* shared, size_t length) {
  if (length == 0) return false;
  // Seqlock reader: head (acquire), body (relaxed), acquire fence, head again. If a
  // writer that changes the head before writing the body (and fences) raced with the
  // body copy, the second head load sees the change.
  const uint64_t head = LoadHead(shared, length, std::memory_order_acquire);
  const size_t head_len = length < 8 ? length : 8;
  auto* dst = static_cast<uint8_t*>(local);
  const auto* src = static_cast<const uint8_t*>(shared);
  std::memcpy(dst, &head, head_len);
#if defined(__SANITIZE_THREAD__)
  size_t i = head_len;
  while (i < length && !Aligned8(src + i)) {
    dst[i] = LoadByte(src + i, std::memory_order_relaxed);
    ++i;
  }
  for (; i + 8 <= length; i += 8) {
    const uint64_t w = LoadWord(src + i, std::memory_order_relaxed);
    std::memcpy(dst + i, &w, 8);
  }
  for (; i < length; ++i) dst[i] = LoadByte(src + i, std::memory_order_relaxed);
#else
  std::memcpy(dst + head_len, src + head_len, length - head_len);
#endif
  std::atomic_thread_fence(std::memory_order_acquire);
  if (LoadHead(shared, length, std::memory_order_relaxed) != head) return true;
  // The range may hold several objects (a multi-object READ) whose headers the head
  // check does not cover: read the body again and compare. A writer locks an object's
  // header before touching its lines and changes it when done, so a write that raced
  // with the copy of any object in the range left that header different here.
  for (size_t i = head_len; i + 8 <= length; i += 8) {
    uint64_t copied;
    std::memcpy(&copied, dst + i, 8);
    if (LoadRelaxed8(src + i) != copied) return true;
  }
  return false;
}

}  // namespace farm
