#include "tx/backup_log.h"

#include "absl/strings/str_format.h"
#include "farm/base/object_codec.h"

namespace farm::tx {
namespace {

// Whether `object` (a backup copy's) already reflects entry `e`: the slot is at a later
// incarnation than the entry's (the object was freed since, or its block carved anew,
// which starts versions again from 0 but incarnations above every earlier one: a
// retained record past its use), or the copy moved past the version the primary locked
// the object from (versions only grow while the block lives, frees and allocations
// included), or, for a one-sided object's allocation or free, its header already is (or
// no longer is) a one-sided object's. A copy's incarnation may lag its primary's (frees
// of aborted allocations are not replicated), never lead it. An entry with no version to
// go by (kAnyVersion: a prepared record's blind write) never counts as applied.
bool AppliedAlready(const LogEntryView& e, const char* object) {
  const uint64_t slot = IncarnationOf(LoadHeaderWord(object + kIncarnationOffset));
  if (static_cast<int32_t>(e.incarnation - FatIncarnation(slot)) < 0) return true;
  const uint64_t now = LoadHeaderWord(object + kVersionOffset);
  switch (e.op) {
    case LogOp::kAllocRaw:
      return IsRawHeaderWord(now);
    case LogOp::kFreeRaw:
      return !IsRawHeaderWord(now);
    default:
      if (e.version == kAnyVersion) return false;
      return IsRawHeaderWord(now) || Unlocked(now) > e.version;
  }
}

}  // namespace

char* BackupLog::ObjectAt(const LogEntryView& e) const {
  const Region* copy = copies_->Find(e.address.region());
  if (copy == nullptr && promoted_ != nullptr) {
    if (const alloc::LocalRegion* r = promoted_->FindRegion(e.address.region())) copy = &r->region();
  }
  if (copy == nullptr || e.address.offset() % kObjectAlignment != 0 ||
      !copy->Contains(e.address.offset(), StoredBytes(e.address.offset(), e.size))) {
    return nullptr;
  }
  return copy->base() + e.address.offset();
}

char* BackupLog::CopyObjectAt(const LogEntryView& e) const {
  const Region* copy = copies_->Find(e.address.region());
  if (copy == nullptr || e.address.offset() % kObjectAlignment != 0 ||
      !copy->Contains(e.address.offset(), StoredBytes(e.address.offset(), e.size))) {
    return nullptr;
  }
  return copy->base() + e.address.offset();
}

std::vector<uint64_t> BackupLog::PendingTransactions() const {
  std::vector<uint64_t> out;
  out.reserve(pending_.size());
  for (const auto& [id, record] : pending_) out.push_back(id);
  return out;
}

absl::Status BackupLog::CheckEntries(const LogRecord& record) const {
  for (const LogEntry& e : record.entries) {
    if (ObjectAt(LogEntryView::Of(e)) == nullptr || e.payload.size() != (CarriesPayload(e.op) ? e.size : 0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "no backup copy holds an object of %d bytes at %s", e.size, e.address.ToString()));
    }
  }
  return absl::OkStatus();
}

absl::Status BackupLog::Prepare(LogRecord record) {
  if (record.kind != LogKind::kLock) return absl::InvalidArgumentError("Prepare takes a lock record");
  if (absl::Status s = CheckEntries(record); !s.ok()) return s;
  if (!pending_.emplace(record.transaction, std::move(record)).second) {
    return absl::AlreadyExistsError("transaction prepared here already");
  }
  ++stats_.prepared;
  return absl::OkStatus();
}

absl::Status BackupLog::Commit(uint64_t transaction) {
  auto it = pending_.find(transaction);
  if (it == pending_.end()) {
    return absl::NotFoundError(absl::StrFormat("transaction %x is not prepared here", transaction));
  }
  ApplyEntries(it->second);
  pending_.erase(it);
  ++stats_.committed;
  return absl::OkStatus();
}

absl::StatusOr<size_t> BackupLog::Missing(const LogRecordView& record) const {
  if (record.kind != LogKind::kCommit) return absl::InvalidArgumentError("Apply takes a commit record");
  size_t missing = 0;
  for (const LogEntryView& e : record.entries) {
    if (copies_->Find(e.address.region()) == nullptr) continue;
    const char* object = CopyObjectAt(e);
    if (object == nullptr || e.payload.size() != (CarriesPayload(e.op) ? e.size : 0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the backup copy of region %d holds no object of %d bytes at %s", e.address.region(), e.size,
          e.address.ToString()));
    }
    missing += !AppliedAlready(e, object);
  }
  return missing;
}

absl::StatusOr<size_t> BackupLog::Apply(const LogRecordView& record) {
  absl::StatusOr<size_t> missing = Missing(record);
  if (!missing.ok() || *missing == 0) return missing;
  for (const LogEntryView& e : record.entries) {
    if (copies_->Find(e.address.region()) == nullptr) continue;
    char* object = CopyObjectAt(e);
    if (AppliedAlready(e, object)) {
      ++stats_.entries_skipped;
      continue;
    }
    ApplyEntry(e, object);
  }
  ++stats_.committed;
  return missing;
}

size_t BackupLog::ApplyMissing(const LogRecord& record, const absl::flat_hash_set<RegionId>& regions) {
  size_t applied = 0;
  for (const LogEntry& owned : record.entries) {
    const LogEntryView e = LogEntryView::Of(owned);
    if (!regions.contains(e.address.region())) continue;
    char* object = CopyObjectAt(e);
    if (object == nullptr || e.payload.size() != (CarriesPayload(e.op) ? e.size : 0) || AppliedAlready(e, object)) {
      continue;
    }
    ApplyEntry(e, object);
    ++applied;
  }
  return applied;
}

absl::Status BackupLog::Abort(uint64_t transaction) {
  if (pending_.erase(transaction) == 0) {
    return absl::NotFoundError(absl::StrFormat("transaction %x is not prepared here", transaction));
  }
  ++stats_.aborted;
  return absl::OkStatus();
}

void BackupLog::ApplyEntries(const LogRecord& record) {
  for (const LogEntry& owned : record.entries) {
    const LogEntryView e = LogEntryView::Of(owned);
    ApplyEntry(e, ObjectAt(e));
  }
}

void BackupLog::ApplyEntry(const LogEntryView& e, char* object) {
  const uint64_t from = e.version == kAnyVersion ? Unlocked(LoadHeaderWord(object + kVersionOffset)) : e.version;
  // The entry's pointer names the object's incarnation (its primary checked it when
  // it locked the object); this copy may be behind it: the frees of allocations that
  // aborted move a slot's incarnation on without a record (alloc/README.md).
  const uint64_t incarnation =
      IncarnationNamed(IncarnationOf(LoadHeaderWord(object + kIncarnationOffset)), e.incarnation);
  switch (e.op) {
    case LogOp::kFree:
    case LogOp::kFreeRaw:  // `from` is the raw header word less its lock bits: a plain version
      StoreHeaderWord(object + kIncarnationOffset, IncarnationWord(incarnation + 1, false));
      StoreHeaderWord(object + kVersionOffset, NextVersion(from));
      break;
    case LogOp::kAllocRaw:
      StoreHeaderWord(object + kIncarnationOffset, IncarnationWord(incarnation, true));
      WriteRawObject(object, e.size, e.incarnation);
      break;
    case LogOp::kWriteNewIncarnation:
      StoreHeaderWord(object + kIncarnationOffset, IncarnationWord(incarnation + 1, true));
      WriteLockedObject(object, e.address.offset(), from, e.payload);
      break;
    case LogOp::kAlloc:
      StoreHeaderWord(object + kIncarnationOffset, IncarnationWord(incarnation, true));
      WriteLockedObject(object, e.address.offset(), from, e.payload);
      break;
    case LogOp::kWrite:
      WriteLockedObject(object, e.address.offset(), from, e.payload);
      break;
  }
  ++stats_.entries_applied;
}

}  // namespace farm::tx
