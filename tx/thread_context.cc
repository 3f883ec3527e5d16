#include "tx/thread_context.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/log.h"
#include "farm/base/status_join.h"
#include "farm/base/wire.h"
#include "farm/msg/call_all.h"

namespace farm::tx {

ThreadContext::ThreadContext(NodeId self, MsgThread* thread, alloc::ThreadAllocator* allocator,
                             const alloc::BackupRegions* copies, std::unique_ptr<ObjectReader> reader,
                             const TxOptions& options, alloc::ThreadLog* log, uint32_t boot)
    : self_(self),
      thread_(thread),
      copies_(copies),
      allocator_(allocator),
      reader_(std::move(reader)),
      options_(options),
      participant_(&allocator->allocator().blocks()),
      backup_log_(copies, &allocator->allocator().blocks()),
      log_(log),
      boot_(boot),
      alive_(std::make_shared<ThreadContext*>(this)) {}

ThreadContext::~ThreadContext() { alive_.reset(); }

std::shared_ptr<const membership::Placement> ThreadContext::placement() const {
  return allocator_->allocator().environment().placement();
}

std::vector<NodeId> ThreadContext::members() const {
  std::shared_ptr<const membership::Placement> p = placement();
  if (p == nullptr) return {};
  std::vector<NodeId> members = p->members();
  std::sort(members.begin(), members.end());
  return members;
}

uint64_t ThreadContext::NewTransactionId() {
  static_assert(membership::kMaxNodeId <= (1u << 20), "node ids take 20 bits of a transaction id");
  return (uint64_t{self_} << 44) | ((uint64_t{thread_->index()} & 0x3F) << 38) | ((uint64_t{boot_} & 0xFF) << 30) |
         (next_transaction_++ & ((uint64_t{1} << 30) - 1));
}

absl::Status ThreadContext::CheckServing() const {
  if (gate_ == nullptr || gate_->serving_at(loop().now_ns())) return absl::OkStatus();
  return absl::UnavailableError(absl::StrFormat(
      "node %d is not serving (its lease is lost, or it is not a member of the configuration)", self_));
}

absl::Status ThreadContext::CheckEpoch(uint64_t epoch) const {
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  if (epoch < fence_epoch_) {
    return absl::AbortedError(absl::StrFormat(
        "the configuration changed (transaction in epoch %d; node %d recovers from a failure in epoch %d)", epoch,
        self_, fence_epoch_));
  }
  std::shared_ptr<const membership::Placement> p = placement();
  const uint64_t now = p == nullptr ? 0 : p->epoch();
  if (epoch == now) return absl::OkStatus();
  return absl::AbortedError(absl::StrFormat(
      "the configuration changed (transaction in epoch %d, node %d in epoch %d)", epoch, self_, now));
}

void ThreadContext::Log(storage::NodeLogType type, const LogRecord& record, absl::string_view encoded,
                        TxDone done) {
  if (!log_->durable()) return done(absl::OkStatus());
  std::string bytes;
  if (encoded.empty()) {
    if (absl::Status s = EncodeLogRecord(record, &bytes); !s.ok()) return done(s);
    encoded = bytes;
  }
  log_->Append(type, encoded, std::move(done));
}

void ThreadContext::Prepare(const LogRecord& record, const std::vector<NodeId>& participants,
                            absl::string_view encoded, TxDone done) {
  if (absl::Status s = PrepareHere(record); !s.ok()) return done(s);
  participants_[record.transaction].assign(participants.begin(), participants.end());
  if (!log_->durable()) return done(absl::OkStatus());
  std::string bytes;
  if (encoded.empty()) {
    if (absl::Status s = EncodePrepare(record, participants, &bytes); !s.ok()) return done(s);
    encoded = bytes;
  }
  // A failed append leaves the locks: the coordinator aborts everywhere on the error.
  log_->Append(storage::NodeLogType::kTxPrepared, encoded, std::move(done));
}

absl::Status ThreadContext::PrepareHere(const LogRecord& record) {
  if (record.kind != LogKind::kLock) return absl::InvalidArgumentError("PREPARE carries a lock record");
  if (absl::Status s = CheckEpoch(record.epoch); !s.ok()) return s;
  ++stats_.served_prepares;
  LogRecord primary, backup;
  primary.kind = backup.kind = LogKind::kLock;
  primary.transaction = backup.transaction = record.transaction;
  primary.epoch = backup.epoch = record.epoch;
  const alloc::BlockAllocator& blocks = allocator_->allocator().blocks();
  for (const LogEntry& e : record.entries) {
    if (blocks.FindRegion(e.address.region()) != nullptr) {
      primary.entries.push_back(e);
      continue;
    }
    if (absl::Status s = CheckNotArriving(e.address.region()); !s.ok()) return s;
    if (absl::Status s = CheckBackupCopyHere(e.address.region()); !s.ok()) return s;
    backup.entries.push_back(e);
  }
  if (!primary.entries.empty()) {
    if (absl::Status s = participant_.Lock(primary, kWriteLock); !s.ok()) return s;
  }
  if (!backup.entries.empty()) {
    if (absl::Status s = backup_log_.Prepare(std::move(backup)); !s.ok()) {
      if (!primary.entries.empty()) (void)participant_.Abort(record.transaction);
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ThreadContext::CheckNotArriving(RegionId region) {
  placement_cache_.Update(placement());
  absl::StatusOr<membership::ReplicaSet> rs = placement_cache_.Lookup(region);
  if (!rs.ok() || rs->primary() != self_) return absl::OkStatus();
  return absl::UnavailableError(absl::StrFormat(
      "node %d is becoming the primary of region %d (its copy is on the way): try again", self_, region));
}

absl::Status ThreadContext::CheckBackupCopyHere(RegionId region) {
  if (copies_->Find(region) != nullptr) return absl::OkStatus();
  placement_cache_.Update(placement());
  absl::StatusOr<membership::ReplicaSet> rs = placement_cache_.Lookup(region);
  if (!rs.ok() || !rs->Contains(self_)) return absl::OkStatus();  // BackupLog says what is wrong
  return absl::UnavailableError(absl::StrFormat(
      "node %d is a new backup of region %d (its copy is on the way): try again", self_, region));
}

absl::Status ThreadContext::Validate(const LogRecord& reads) {
  if (reads.kind != LogKind::kValidate && reads.kind != LogKind::kValidateReadOnly) {
    return absl::InvalidArgumentError("VALIDATE carries a validate record");
  }
  if (absl::Status s = CheckEpoch(reads.epoch); !s.ok()) return s;
  return participant_.Validate(reads.transaction, ReadEntriesOf(reads), reads.kind == LogKind::kValidateReadOnly);
}

void ThreadContext::FreeCommitted(const std::vector<FatPtr>& freed) {
  for (const FatPtr& p : freed) {
    // The object was locked and allocated at this incarnation a moment ago: a failure
    // here is a bug elsewhere, reported but not fatal to the committed transaction.
    if (absl::Status s = allocator_->FreeLocal(p); !s.ok()) {
      FARM_LOG(kError, "node %u: free of %s committed but failed: %s", self_, p.ToString(), s.ToString());
    }
  }
}

void ThreadContext::Decide(const TxDecision& d, TxDone done) {
  if (d.decision != Decision::kAbort && recovering_.contains(d.transaction)) {
    return done(absl::AbortedError(absl::StrFormat(
        "transaction %x is recovered after a failure: recovery decides its outcome", d.transaction)));
  }
  switch (d.decision) {
    case Decision::kCommitBackup:
      if (absl::Status s = backup_log_.Commit(d.transaction); !s.ok()) return done(s);
      if (recent_ != nullptr) recent_->Add(d.transaction);
      ForgetIfDone(d.transaction);
      if (!log_->durable()) return done(absl::OkStatus());
      return log_->Append(storage::NodeLogType::kTxCommitted, EncodeTransactionId(d.transaction), std::move(done));
    case Decision::kCommitPrimary:
      if (!participant_.Holds(d.transaction)) {
        return done(absl::NotFoundError(absl::StrFormat("transaction %x holds no locks here", d.transaction)));
      }
      if (recent_ != nullptr) recent_->Add(d.transaction);
      return CommitPrimaryWhenDurable(d.transaction, std::move(done));
    case Decision::kAbort:
      AbortHere(d.transaction);
      return done(absl::OkStatus());
  }
  done(absl::InvalidArgumentError("unknown decision"));
}

void ThreadContext::AbortHere(uint64_t transaction) {
  const bool held = participant_.Abort(transaction).ok();
  if (auto it = restored_allocations_.find(transaction); it != restored_allocations_.end()) {
    FreeCommitted(it->second);  // as its coordinator would have on the abort
    restored_allocations_.erase(it);
  }
  const bool kept = backup_log_.Abort(transaction).ok();
  if (auto it = recovering_.find(transaction); it != recovering_.end()) {
    for (const FatPtr& p : it->second.promoted) recovery_locks_->Drop(p.addr, /*committed=*/false);
    FreeCommitted(it->second.promoted_allocations);
    recovering_.erase(it);
  }
  participants_.erase(transaction);
  // Not waited for: without it replay leaves the transaction undecided, and recovery
  // aborts it unless some replica logged a commit (none can have).
  if ((held || kept) && log_->durable()) {
    log_->AppendUnwaited(storage::NodeLogType::kTxAborted, EncodeTransactionId(transaction));
  }
}

void ThreadContext::ForgetIfDone(uint64_t transaction) {
  if (!participant_.Holds(transaction) && backup_log_.Find(transaction) == nullptr) {
    participants_.erase(transaction);
  }
}

void ThreadContext::CommitPrimaryWhenDurable(uint64_t transaction, TxDone done) {
  auto apply = [this, transaction](TxDone& done) {
    restored_allocations_.erase(transaction);
    participants_.erase(transaction);
    freed_.clear();
    absl::Status s = participant_.Commit(transaction, &freed_);
    if (s.ok()) FreeCommitted(freed_);
    if (done) done(s);
  };
  if (!log_->durable()) return apply(done);
  std::weak_ptr<ThreadContext*> alive = alive_;
  log_->Append(storage::NodeLogType::kTxCommitted, EncodeTransactionId(transaction),
               [alive, transaction, apply, done = std::move(done)](const absl::Status& s) mutable {
                 if (alive.expired()) return;
                 ThreadContext* self = *alive.lock();
                 if (s.ok()) return apply(done);
                 if (done) done(s);
                 // The decision stands (the backups have it): keep the locks and try
                 // again, so the objects are applied once the log takes the record.
                 self->loop().RunAfter(absl::Milliseconds(100), [alive, transaction] {
                   if (alive.expired()) return;
                   (*alive.lock())->CommitPrimaryWhenDurable(transaction, nullptr);
                 });
               });
}

absl::Status ThreadContext::RestoreInDoubt(LogRecord primary, LogRecord backup,
                                           const std::vector<NodeId>& participants) {
  if (!participants.empty()) {
    participants_[primary.transaction].assign(participants.begin(), participants.end());
  }
  std::vector<FatPtr> allocated;
  for (const LogEntry& e : primary.entries) {
    if (e.op == LogOp::kAlloc || e.op == LogOp::kAllocRaw) {
      allocated.push_back(FatPtr{e.address, e.size, e.incarnation});
    }
  }
  if (!allocated.empty()) restored_allocations_[primary.transaction] = std::move(allocated);
  if (!primary.entries.empty()) {
    if (absl::Status s = participant_.Restore(std::move(primary)); !s.ok()) return s;
  }
  if (!backup.entries.empty()) return backup_log_.Prepare(std::move(backup));
  return absl::OkStatus();
}

// --- Failover ---

absl::Status ThreadContext::FenceForFailover(const FailoverFence& fence) {
  fence_epoch_ = std::max(fence_epoch_, fence.epoch);
  ForgetDeparted(fence.departed);
  absl::Status first_error;  // every transaction is looked at even after one fails
  std::vector<uint64_t> candidates = participant_.LockedTransactions();
  for (uint64_t t : backup_log_.PendingTransactions()) {
    if (!participant_.Holds(t)) candidates.push_back(t);
  }
  for (uint64_t t : candidates) {
    if (recovering_.contains(t)) continue;
    auto p = participants_.find(t);
    if (p == participants_.end()) continue;  // this thread's own single-machine commit: it ends by itself
    const bool lost = fence.departed.contains(CoordinatorOf(t)) ||
                      std::any_of(p->second.begin(), p->second.end(),
                                  [&](NodeId n) { return fence.departed.contains(n); });
    if (!lost) continue;
    RecoveryState r;
    r.participants.assign(p->second.begin(), p->second.end());
    const LogRecord* held = participant_.Find(t);
    const LogRecord* kept = backup_log_.Find(t);
    r.epoch = held != nullptr ? held->epoch : kept->epoch;
    if (kept != nullptr) {
      for (const LogEntry& e : kept->entries) {
        if (!fence.promoting.contains(e.address.region())) continue;
        const Region* copy = copies_->Find(e.address.region());
        if (copy == nullptr || !copy->Contains(e.address.offset(), StoredBytes(e.address.offset(), e.size))) {
          first_error.Update(absl::InternalError(
              absl::StrFormat("transaction %x: %s is in no copy held here", t, e.address.ToString())));
          continue;
        }
        char* object = copy->base() + e.address.offset();
        const FatPtr ptr{e.address, e.size, e.incarnation};
        if (e.op == LogOp::kAlloc || e.op == LogOp::kAllocRaw) {
          // As at a restart (recovery.cc): the old primary marked the slot allocated when
          // the transaction took it; the copy learns it only at commit. Marked here so the
          // promoted region's allocator scan keeps the slot while recovery decides.
          const uint64_t word = LoadHeaderWord(object + kIncarnationOffset);
          StoreHeaderWord(object + kIncarnationOffset,
                          IncarnationWord(IncarnationNamed(IncarnationOf(word), e.incarnation), true));
          r.promoted_allocations.push_back(ptr);
        }
        if (absl::Status s = recovery_locks_->Take(e.address, object); !s.ok()) {
          first_error.Update(s);
          continue;
        }
        r.promoted.push_back(ptr);
      }
    }
    recovering_.emplace(t, std::move(r));
  }
  return first_error;
}

bool ThreadContext::KeepsRecordsIn(RegionId region) const {
  for (uint64_t t : backup_log_.PendingTransactions()) {
    for (const LogEntry& e : backup_log_.Find(t)->entries) {
      if (e.address.region() == region) return true;
    }
  }
  return false;
}

std::vector<RecoveringTx> ThreadContext::Recovering() const {
  std::vector<RecoveringTx> out;
  out.reserve(recovering_.size());
  for (const auto& [t, r] : recovering_) out.push_back(RecoveringTx{t, r.epoch, r.participants});
  return out;
}

void ThreadContext::SettleRecovered(uint64_t transaction, bool commit, TxDone done) {
  auto it = recovering_.find(transaction);
  if (it == recovering_.end()) return done(absl::OkStatus());  // its coordinator aborted it meanwhile
  if (!commit) {
    AbortHere(transaction);
    return done(absl::OkStatus());
  }
  RecoveryState r = std::move(it->second);
  recovering_.erase(it);
  if (recent_ != nullptr) recent_->Add(transaction);
  auto all = StatusJoin::Create(2, std::move(done));
  // Its backup copies (promoted ones included: the write publishes an unlocked version),
  // then its objects here as primary.
  if (backup_log_.Find(transaction) != nullptr) {
    (void)backup_log_.Commit(transaction);
    for (const FatPtr& p : r.promoted) recovery_locks_->Drop(p.addr, /*committed=*/true);
    if (log_->durable()) {
      log_->Append(storage::NodeLogType::kTxCommitted, EncodeTransactionId(transaction), StatusJoin::Part(all));
    } else {
      StatusJoin::Part(all)(absl::OkStatus());
    }
  } else {
    StatusJoin::Part(all)(absl::OkStatus());
  }
  if (participant_.Holds(transaction)) {
    CommitPrimaryWhenDurable(transaction, StatusJoin::Part(all));
  } else {
    participants_.erase(transaction);
    StatusJoin::Part(all)(absl::OkStatus());
  }
}

}  // namespace farm::tx
