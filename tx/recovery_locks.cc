#include "tx/recovery_locks.h"

#include "absl/strings/str_format.h"
#include "farm/base/cpu_relax.h"
#include "farm/base/object_codec.h"
#include "farm/base/object_layout.h"

namespace farm::tx {
namespace {

constexpr int kMaxSpins = 1 << 20;  // far longer than one object's write

}  // namespace

absl::Status RecoveryLocks::Take(Addr address, char* object) {
  MutexLock lock(&mu_);
  auto it = held_.find(address.raw());
  if (it != held_.end()) {
    ++it->second.holders;
    return absl::OkStatus();
  }
  // Another worker thread, not fenced yet, may be applying a commit to this backup copy
  // right now (the writer protocol locks the header for a moment): wait it out.
  uint64_t version = LoadHeaderWord(object + kVersionOffset);
  if (IsRawHeaderWord(version)) {
    // A one-sided object (a kFreeRaw in doubt): locked by its kRawLocked flag, and lost
    // with its old primary (one-sided writes are not replicated), whatever recovery
    // decides.
    uint64_t expected = version;
    if ((version & kRawLocked) != 0 ||
        !CasHeaderWord(object + kVersionOffset, expected, version | kRawLost | kRawLocked)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s is locked by another transaction before recovery could lock it", address.ToString()));
    }
    held_.emplace(address.raw(), Held{object, version | kRawLost, 1, false});
    return absl::OkStatus();
  }
  for (int spins = 0; IsLocked(version) && spins < kMaxSpins; ++spins) {
    CpuRelax();
    version = LoadHeaderWord(object + kVersionOffset);
  }
  if (IsLocked(version) || !LockObject(object, version, kWriteLock)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is locked by another transaction before recovery could lock it", address.ToString()));
  }
  held_.emplace(address.raw(), Held{object, version, 1, false});
  return absl::OkStatus();
}

void RecoveryLocks::Drop(Addr address, bool committed) {
  MutexLock lock(&mu_);
  auto it = held_.find(address.raw());
  if (it == held_.end()) return;
  Held& h = it->second;
  h.committed |= committed;
  if (--h.holders > 0) return;
  if (!h.committed) StoreHeaderWord(h.object + kVersionOffset, h.locked_from);
  held_.erase(it);
}

size_t RecoveryLocks::HeldIn(RegionId region) const {
  MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [raw, h] : held_) n += Addr::FromRaw(raw).region() == region;
  return n;
}

size_t RecoveryLocks::size() const {
  MutexLock lock(&mu_);
  return held_.size();
}

}  // namespace farm::tx
