#include "tx/participant.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"

namespace farm::tx {

char* Participant::ObjectAt(Addr address, uint64_t payload) const {
  const alloc::LocalRegion* r = regions_->FindRegion(address.region());
  return r == nullptr ? nullptr : ObjectIn(*r, address, payload);
}

char* Participant::ObjectIn(const alloc::LocalRegion& r, Addr address, uint64_t payload) {
  if (address.offset() % kObjectAlignment != 0 ||
      !r.region().Contains(address.offset(), StoredBytes(address.offset(), payload))) {
    return nullptr;
  }
  return r.base() + address.offset();
}

absl::Status Participant::CheckIncarnation(const LogEntry& e, const char* object) {
  const uint64_t incarnation = LoadHeaderWord(object + kIncarnationOffset);
  if (!IsAllocated(incarnation) || FatIncarnation(IncarnationOf(incarnation)) != e.incarnation) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s was freed (incarnation %d, allocated %d; the pointer has %d)", e.address.ToString(),
        IncarnationOf(incarnation), IsAllocated(incarnation), e.incarnation));
  }
  return absl::OkStatus();
}

absl::Status Participant::LockRawEntry(LogEntry& e, char* object, uint64_t current) {
  // A stale pointer is the pointer's error, whatever the slot holds now.
  if (absl::Status s = CheckIncarnation(e, object); !s.ok()) return s;
  if (e.op != LogOp::kFreeRaw) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is a one-sided object (rawAlloc): a transaction can neither write nor free it "
        "(rawFree frees it)",
        e.address.ToString()));
  }
  if (!IsRawHeaderWord(current)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is a transactional object, not a one-sided one: free it with txFree", e.address.ToString()));
  }
  if ((current & kRawLocked) != 0) {
    return absl::AbortedError(absl::StrFormat("%s is being freed by another transaction", e.address.ToString()));
  }
  if ((current & (kRawDying | kRawLost)) == 0 || RawSizeOf(current) != e.size ||
      !RawIncarnationMatches(current, e.incarnation)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is a live one-sided object (rawFree marks it dying first) or not the one named", e.address.ToString()));
  }
  uint64_t expected = current;
  if (!CasHeaderWord(object + kVersionOffset, expected, current | kRawLocked)) {
    return absl::AbortedError(absl::StrFormat("%s changed while it was locked", e.address.ToString()));
  }
  if (absl::Status s = CheckIncarnation(e, object); !s.ok()) {
    StoreHeaderWord(object + kVersionOffset, current);
    return s;
  }
  e.version = current;
  return absl::OkStatus();
}

absl::Status Participant::LockEntry(LogEntry& e, uint64_t mode) {
  char* object = ObjectAt(e.address, e.size);
  const uint64_t now = LoadHeaderWord(object + kVersionOffset);
  if (e.op == LogOp::kFreeRaw || IsRawHeaderWord(now)) return LockRawEntry(e, object, now);
  const uint64_t expected = e.version == kAnyVersion ? now : e.version;
  if (!LockObject(object, expected, mode)) {
    const uint64_t now = LoadHeaderWord(object + kVersionOffset);
    return absl::AbortedError(
        IsLocked(now) ? absl::StrFormat("%s is locked by another transaction", e.address.ToString())
                      : absl::StrFormat("%s moved from version %d to %d", e.address.ToString(),
                                        expected, now));
  }
  if (absl::Status s = CheckIncarnation(e, object); !s.ok()) {
    StoreHeaderWord(object + kVersionOffset, expected);
    return s;
  }
  e.version = expected;
  return absl::OkStatus();
}

absl::Status Participant::Lock(const LogRecord& record, uint64_t mode) {
  if (record.kind != LogKind::kLock) {
    return absl::InvalidArgumentError("Lock takes a lock record");
  }
  if (locked_.contains(record.transaction)) {
    return absl::AlreadyExistsError(absl::StrFormat("transaction %x is locked here already", record.transaction));
  }
  // Check every address before touching anything.
  absl::flat_hash_set<uint64_t> seen;
  for (const LogEntry& e : record.entries) {
    const alloc::LocalRegion* r = regions_->FindRegion(e.address.region());
    if (r == nullptr || ObjectIn(*r, e.address, e.size) == nullptr ||
        e.payload.size() != (CarriesPayload(e.op) ? e.size : 0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "no object of %d bytes at %s on this node", e.size, e.address.ToString()));
    }
    if (r->frozen()) {
      return absl::AbortedError(absl::StrFormat(
          "region %d is being re-replicated after a configuration change (try again)", e.address.region()));
    }
    if (!seen.insert(e.address.raw()).second) {
      return absl::InvalidArgumentError(absl::StrFormat("%s appears twice in one lock record",
                                                        e.address.ToString()));
    }
  }
  LogRecord held = record;
  for (size_t i = 0; i < held.entries.size(); ++i) {
    if (absl::Status s = LockEntry(held.entries[i], mode); !s.ok()) {
      for (size_t j = 0; j < i; ++j) {  // all or nothing
        const LogEntry& taken = held.entries[j];
        StoreHeaderWord(ObjectAt(taken.address, taken.size) + kVersionOffset, taken.version);
      }
      return s;
    }
  }
  for (const LogEntry& e : held.entries) holders_[e.address.raw()] = record.transaction;
  locked_.emplace(record.transaction, std::move(held));
  return absl::OkStatus();
}

absl::InlinedVector<ReadEntry, 8> ReadEntriesOf(const LogRecord& reads) {
  absl::InlinedVector<ReadEntry, 8> entries;
  entries.reserve(reads.entries.size());
  for (const LogEntry& e : reads.entries) entries.push_back(ReadEntry{e.address, e.version});
  return entries;
}

absl::Status Participant::InvalidRead(const ReadEntry& r, uint64_t now, bool ours) {
  return absl::AbortedError(IsLocked(now) && !ours
                                ? absl::StrFormat("%s is locked by another transaction", r.address.ToString())
                                : absl::StrFormat("%s moved from version %d to %d", r.address.ToString(),
                                                  r.version, Unlocked(now)));
}

absl::Status Participant::Validate(uint64_t transaction, std::span<const ReadEntry> reads, bool read_only) const {
  for (const ReadEntry& r : reads) {
    const char* object = ObjectAt(r.address, 0);
    if (object == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("no object at %s on this node", r.address.ToString()));
    }
    const uint64_t now = LoadHeaderWord(object + kVersionOffset);
    auto holder = holders_.find(r.address.raw());
    const bool ours = holder != holders_.end() && holder->second == transaction;
    if (ours ? Unlocked(now) == r.version
             : (now == r.version || now == (r.version | kPinned) ||
                (read_only && now == (r.version | kSharedLock)))) {
      continue;
    }
    return InvalidRead(r, now, ours);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Participant::PinReads(uint64_t transaction, std::span<const ReadEntry> reads) {
  if (!locked_.contains(transaction)) {
    return absl::NotFoundError(absl::StrFormat("transaction %x holds no locks here", transaction));
  }
  auto [it, inserted] = pinned_.try_emplace(transaction);
  if (!inserted) {
    return absl::AlreadyExistsError(absl::StrFormat("transaction %x has pinned its reads already", transaction));
  }
  bool all_pinned = true;
  absl::Status invalid;
  for (const ReadEntry& r : reads) {
    const alloc::LocalRegion* region = regions_->FindRegion(r.address.region());
    char* object = region == nullptr ? nullptr : ObjectIn(*region, r.address, 0);
    if (object == nullptr) {
      invalid = absl::InvalidArgumentError(absl::StrFormat("no object at %s on this node", r.address.ToString()));
      break;
    }
    const uint64_t now = LoadHeaderWord(object + kVersionOffset);
    auto holder = holders_.find(r.address.raw());
    if (holder != holders_.end() && holder->second == transaction) {
      if (Unlocked(now) == r.version) continue;
      invalid = InvalidRead(r, now, true);
      break;
    }
    if (now == (r.version | kPinned) || (now == r.version && region->frozen())) {
      all_pinned = false;  // valid: another transaction's pin keeps it as read
      continue;
    }
    if (now != r.version || !PinObject(object, r.version)) {
      invalid = InvalidRead(r, LoadHeaderWord(object + kVersionOffset), false);
      break;
    }
    it->second.push_back(r);
  }
  if (!invalid.ok() || !all_pinned) Unpin(transaction);
  if (!invalid.ok()) return invalid;
  return all_pinned;
}

void Participant::Unpin(uint64_t transaction) {
  auto it = pinned_.find(transaction);
  if (it == pinned_.end()) return;
  for (const ReadEntry& r : it->second) UnpinObject(ObjectAt(r.address, 0), r.version);
  pinned_.erase(it);
}

absl::Status Participant::Commit(uint64_t transaction, std::vector<FatPtr>* freed) {
  auto it = locked_.find(transaction);
  if (it == locked_.end()) {
    return absl::NotFoundError(absl::StrFormat("transaction %x holds no locks here", transaction));
  }
  const std::vector<LogEntry>& entries = it->second.entries;
  for (const LogEntry& e : entries) {
    // A one-sided object's lock (kRawLocked) is exclusive already.
    if (e.op != LogOp::kFreeRaw) UpgradeLock(ObjectAt(e.address, e.size), e.version);
  }
  for (const LogEntry& e : entries) {
    char* object = ObjectAt(e.address, e.size);
    switch (e.op) {
      case LogOp::kFree:
      case LogOp::kFreeRaw:
        // Content stays; the allocator's free moves the incarnation next. A one-sided
        // object's slot gets a plain, unlocked version for whatever it holds next.
        StoreHeaderWord(object + kVersionOffset, NextVersion(e.version));
        freed->push_back(FatPtr{e.address, e.size, e.incarnation});
        break;
      case LogOp::kAllocRaw:
        // Write-locked until the raw header word replaces the version (no line was
        // marked: a one-sided object has none).
        WriteRawObject(object, e.size, e.incarnation);
        break;
      case LogOp::kWriteNewIncarnation: {
        const uint64_t word = LoadHeaderWord(object + kIncarnationOffset);
        StoreHeaderWord(object + kIncarnationOffset, IncarnationWord(IncarnationOf(word) + 1, true));
        [[fallthrough]];
      }
      case LogOp::kWrite:
      case LogOp::kAlloc:
        WriteLockedObject(object, e.address.offset(), e.version, e.payload);
        break;
    }
    holders_.erase(e.address.raw());
  }
  locked_.erase(it);
  Unpin(transaction);  // after every write is published: nothing read changed before
  return absl::OkStatus();
}

absl::Status Participant::Upgrade(uint64_t transaction) {
  auto it = locked_.find(transaction);
  if (it == locked_.end()) {
    return absl::NotFoundError(absl::StrFormat("transaction %x holds no locks here", transaction));
  }
  for (const LogEntry& e : it->second.entries) {
    if (e.op != LogOp::kFreeRaw) UpgradeLock(ObjectAt(e.address, e.size), e.version);
  }
  return absl::OkStatus();
}

absl::Status Participant::Abort(uint64_t transaction) {
  auto it = locked_.find(transaction);
  if (it == locked_.end()) {
    return absl::NotFoundError(absl::StrFormat("transaction %x holds no locks here", transaction));
  }
  for (const LogEntry& e : it->second.entries) {
    // Only the header was locked (lines are marked at commit): restore it.
    StoreHeaderWord(ObjectAt(e.address, e.size) + kVersionOffset, e.version);
    holders_.erase(e.address.raw());
  }
  locked_.erase(it);
  Unpin(transaction);
  return absl::OkStatus();
}

absl::Status Participant::Restore(LogRecord held) {
  if (locked_.contains(held.transaction)) {
    return absl::AlreadyExistsError(absl::StrFormat("transaction %x is locked here already", held.transaction));
  }
  for (const LogEntry& e : held.entries) {
    if (ObjectAt(e.address, e.size) == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("no object of %d bytes at %s on this node", e.size,
                                                        e.address.ToString()));
    }
  }
  for (const LogEntry& e : held.entries) holders_[e.address.raw()] = held.transaction;
  const uint64_t id = held.transaction;
  locked_.emplace(id, std::move(held));
  return absl::OkStatus();
}

std::vector<uint64_t> Participant::LockedTransactions() const {
  std::vector<uint64_t> out;
  out.reserve(locked_.size());
  for (const auto& [id, record] : locked_) out.push_back(id);
  return out;
}

size_t Participant::LocksIn(RegionId region) const {
  size_t n = 0;
  for (const auto& [raw, holder] : holders_) n += Addr::FromRaw(raw).region() == region;
  for (const auto& [transaction, pins] : pinned_) {
    for (const ReadEntry& r : pins) n += r.address.region() == region;
  }
  return n;
}

}  // namespace farm::tx
