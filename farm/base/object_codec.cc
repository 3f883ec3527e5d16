#include "farm/base/object_codec.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "farm/base/cpu_copy.h"

namespace farm {
namespace {

// Calls fn(image_position, payload_position, length) for each run of payload bytes of
// an object at region offset `offset`, in increasing order.
template <typename Fn>
void ForEachPayloadRun(uint64_t offset, uint64_t payload, Fn fn) {
  uint64_t at = offset + kObjectHeaderBytes;  // region offset of the next stored byte
  uint64_t done = 0;
  while (done < payload) {
    if (at % kCacheLineBytes == 0) at += kLineVersionBytes;  // a line version first
    const uint64_t line_end = (at / kCacheLineBytes + 1) * kCacheLineBytes;
    const uint64_t n = std::min(payload - done, line_end - at);
    fn(at - offset, done, n);
    at += n;
    done += n;
  }
}

// Calls fn(image_position) for each line version of the object, in increasing order.
template <typename Fn>
void ForEachLineVersion(uint64_t offset, uint64_t payload, Fn fn) {
  const uint64_t end = offset + StoredBytes(offset, payload);
  for (uint64_t b = (offset / kCacheLineBytes + 1) * kCacheLineBytes; b < end; b += kCacheLineBytes) {
    fn(b - offset);
  }
}

uint16_t LoadLineVersion(const char* at) {
  uint16_t v;
  std::memcpy(&v, at, sizeof(v));
  return v;
}

void StoreLineVersionShared(char* at, uint16_t v) {
  std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(at)).store(v, std::memory_order_release);
}

}  // namespace

void ReadPayload(const char* image, uint64_t offset, std::span<char> payload) {
  ForEachPayloadRun(offset, payload.size(), [&](uint64_t at, uint64_t from, uint64_t n) {
    std::memcpy(payload.data() + from, image + at, n);
  });
}

const char* CopyCheckName(CopyCheck check) {
  switch (check) {
    case CopyCheck::kAccepted: return "accepted";
    case CopyCheck::kLocked: return "locked";
    case CopyCheck::kInconsistent: return "inconsistent";
    case CopyCheck::kNotAllocated: return "not allocated";
    case CopyCheck::kWrongIncarnation: return "wrong incarnation";
    case CopyCheck::kOneSided: return "one-sided object";
  }
  return "?";
}

CopyCheck CheckCopy(const char* image, uint64_t offset, uint64_t payload,
                    uint32_t expected_incarnation, bool torn) {
  uint64_t version, incarnation;
  std::memcpy(&version, image + kVersionOffset, sizeof(version));
  std::memcpy(&incarnation, image + kIncarnationOffset, sizeof(incarnation));
  if (torn) return CopyCheck::kInconsistent;
  if (IsRawHeaderWord(version)) {
    // Stale pointers first: a slot reused for a one-sided object is the pointer's error.
    if (!IsAllocated(incarnation)) return CopyCheck::kNotAllocated;
    if (FatIncarnation(IncarnationOf(incarnation)) != expected_incarnation) {
      return CopyCheck::kWrongIncarnation;
    }
    return CopyCheck::kOneSided;
  }
  if (IsWriteLocked(version) || (version & kLockMask) == kLockMask) return CopyCheck::kLocked;
  if (!IsAllocated(incarnation)) return CopyCheck::kNotAllocated;
  if (FatIncarnation(IncarnationOf(incarnation)) != expected_incarnation) {
    return CopyCheck::kWrongIncarnation;
  }
  bool consistent = true;
  const uint16_t want = LineVersion(Unlocked(version));
  ForEachLineVersion(offset, payload, [&](uint64_t at) {
    consistent &= LoadLineVersion(image + at) == want;
  });
  return consistent ? CopyCheck::kAccepted : CopyCheck::kInconsistent;
}

bool LockObject(char* object, uint64_t expected, uint64_t mode) {
  if (IsLocked(expected) || (mode != kWriteLock && mode != kSharedLock)) return false;
  return CasHeaderWord(object + kVersionOffset, expected, expected | mode);
}

bool PinObject(char* object, uint64_t version) {
  if (IsLocked(version)) return false;
  return CasHeaderWord(object + kVersionOffset, version, version | kPinned);
}

void UnpinObject(char* object, uint64_t version) { StoreHeaderWord(object + kVersionOffset, Unlocked(version)); }

void UpgradeLock(char* object, uint64_t locked_from) {
  StoreHeaderWord(object + kVersionOffset, Unlocked(locked_from) | kWriteLock);
}

void StoreLineVersions(char* object, uint64_t offset, uint64_t payload, uint16_t line_version) {
  ForEachLineVersion(offset, payload, [&](uint64_t at) { StoreLineVersionShared(object + at, line_version); });
}

void WriteLockedObject(char* object, uint64_t offset, uint64_t locked_from,
                       std::span<const char> payload) {
  UpgradeLock(object, locked_from);
  StoreLineVersions(object, offset, payload.size(), LineVersion(locked_from | kWriteLock));
  ForEachPayloadRun(offset, payload.size(), [&](uint64_t at, uint64_t from, uint64_t n) {
    OrderedStoreCopy(object + at, payload.data() + from, n);
  });
  const uint64_t next = NextVersion(locked_from);
  StoreLineVersions(object, offset, payload.size(), LineVersion(next));
  StoreHeaderWord(object + kVersionOffset, next);
}

void WriteRawObject(char* object, uint32_t size, uint32_t incarnation) {
  ZeroShared(object + kObjectHeaderBytes, size);
  PublishZeroes();
  StoreHeaderWord(object + kVersionOffset, RawHeaderWord(size, incarnation));
}

void UnlockObject(char* object, uint64_t offset, uint64_t payload, uint64_t locked_from) {
  StoreLineVersions(object, offset, payload, LineVersion(locked_from));
  StoreHeaderWord(object + kVersionOffset, locked_from);
}

}  // namespace farm
