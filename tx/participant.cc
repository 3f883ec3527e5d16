#include "tx/participant.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "farm/base/object_codec.h"

namespace farm::tx {

char* Participant::ObjectAt(Addr address, uint64_t payload) const {
  const alloc::LocalRegion* r = regions_->FindRegion(address.region());
  if (r == nullptr || address.offset() % kObjectAlignment != 0 ||
      !r->region().Contains(address.offset(), StoredBytes(address.offset(), payload))) {
    return nullptr;
  }
  return r->base() + address.offset();
}

absl::Status Participant::Lock(const LogRecord& record) {
  if (record.kind != LogKind::kLock) {
    return absl::InvalidArgumentError("Lock takes a lock record");
  }
  if (locked_.contains(record.transaction)) {
    return absl::AlreadyExistsError(absl::StrFormat("transaction %x is locked here already", record.transaction));
  }
  // Check every address before touching anything.
  absl::flat_hash_set<uint64_t> seen;
  for (const LogEntry& e : record.entries) {
    if (ObjectAt(e.address, e.payload.size()) == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "no object of %d bytes at %s on this node", e.payload.size(), e.address.ToString()));
    }
    if (!seen.insert(e.address.raw()).second) {
      return absl::InvalidArgumentError(absl::StrFormat("%s appears twice in one lock record",
                                                        e.address.ToString()));
    }
  }
  for (size_t i = 0; i < record.entries.size(); ++i) {
    const LogEntry& e = record.entries[i];
    char* object = ObjectAt(e.address, e.payload.size());
    if (LockObject(object, e.version)) continue;
    const uint64_t now = LoadHeaderWord(object + kVersionOffset);
    for (size_t j = 0; j < i; ++j) {  // all or nothing
      const LogEntry& taken = record.entries[j];
      StoreHeaderWord(ObjectAt(taken.address, taken.payload.size()) + kVersionOffset, taken.version);
    }
    return absl::AbortedError(
        IsLocked(now) ? absl::StrFormat("%s is locked by another transaction", e.address.ToString())
                      : absl::StrFormat("%s moved from version %d to %d", e.address.ToString(),
                                        e.version, now));
  }
  for (const LogEntry& e : record.entries) holders_[e.address.raw()] = record.transaction;
  locked_.emplace(record.transaction, record);
  return absl::OkStatus();
}

absl::Status Participant::Validate(uint64_t transaction, const std::vector<ReadEntry>& reads) const {
  for (const ReadEntry& r : reads) {
    const char* object = ObjectAt(r.address, 0);
    if (object == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("no object at %s on this node", r.address.ToString()));
    }
    const uint64_t now = LoadHeaderWord(object + kVersionOffset);
    auto holder = holders_.find(r.address.raw());
    const bool ours = holder != holders_.end() && holder->second == transaction;
    if (ours ? (now & ~kLockMask) == r.version : now == r.version) continue;
    return absl::AbortedError(
        IsLocked(now) && !ours
            ? absl::StrFormat("%s is locked by another transaction", r.address.ToString())
            : absl::StrFormat("%s moved from version %d to %d", r.address.ToString(), r.version,
                              now & ~kLockMask));
  }
  return absl::OkStatus();
}

absl::Status Participant::Commit(uint64_t transaction) {
  auto it = locked_.find(transaction);
  if (it == locked_.end()) {
    return absl::NotFoundError(absl::StrFormat("transaction %x holds no locks here", transaction));
  }
  for (const LogEntry& e : it->second.entries) {
    char* object = ObjectAt(e.address, e.payload.size());
    if (e.op == LogOp::kFree) {
      // The allocator frees it next (its incarnation moves); the content stays as is.
      StoreHeaderWord(object + kVersionOffset, e.version);
    } else {
      WriteLockedObject(object, e.address.offset(), e.version, e.payload);
    }
    holders_.erase(e.address.raw());
  }
  locked_.erase(it);
  return absl::OkStatus();
}

absl::Status Participant::Abort(uint64_t transaction) {
  auto it = locked_.find(transaction);
  if (it == locked_.end()) {
    return absl::NotFoundError(absl::StrFormat("transaction %x holds no locks here", transaction));
  }
  for (const LogEntry& e : it->second.entries) {
    // Only the header was locked (lines are marked at commit): restore it.
    StoreHeaderWord(ObjectAt(e.address, e.payload.size()) + kVersionOffset, e.version);
    holders_.erase(e.address.raw());
  }
  locked_.erase(it);
  return absl::OkStatus();
}

}  // namespace farm::tx
