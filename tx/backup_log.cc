#include "tx/backup_log.h"

#include "absl/strings/str_format.h"
#include "farm/base/object_codec.h"

namespace farm::tx {

char* BackupLog::ObjectAt(const LogEntry& e) const {
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

std::vector<uint64_t> BackupLog::PendingTransactions() const {
  std::vector<uint64_t> out;
  out.reserve(pending_.size());
  for (const auto& [id, record] : pending_) out.push_back(id);
  return out;
}

absl::Status BackupLog::CheckEntries(const LogRecord& record) const {
  for (const LogEntry& e : record.entries) {
    if (ObjectAt(e) == nullptr || e.payload.size() != (CarriesPayload(e.op) ? e.size : 0)) {
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

absl::Status BackupLog::Apply(const LogRecord& record) {
  if (record.kind != LogKind::kCommit) return absl::InvalidArgumentError("Apply takes a commit record");
  if (absl::Status s = CheckEntries(record); !s.ok()) return s;
  ApplyEntries(record);
  ++stats_.committed;
  return absl::OkStatus();
}

absl::Status BackupLog::Abort(uint64_t transaction) {
  if (pending_.erase(transaction) == 0) {
    return absl::NotFoundError(absl::StrFormat("transaction %x is not prepared here", transaction));
  }
  ++stats_.aborted;
  return absl::OkStatus();
}

void BackupLog::ApplyEntries(const LogRecord& record) {
  for (const LogEntry& e : record.entries) {
    char* object = ObjectAt(e);
    const uint64_t from =
        e.version == kAnyVersion ? Unlocked(LoadHeaderWord(object + kVersionOffset)) : e.version;
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
}

}  // namespace farm::tx
