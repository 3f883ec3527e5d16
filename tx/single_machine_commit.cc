// ThreadContext's single-machine commits (thread_context.h, "CommitSingleMachine"): the
// primary's side — lock, validate and pin, replicate to the backups, apply — and the
// backups' (ApplyBackup). Why a commit record, once sent, is never taken back:
// retained_commits.h.
#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "farm/base/log.h"
#include "farm/base/status_join.h"
#include "farm/storage/record_log.h"
#include "tx/thread_context.h"

namespace farm::tx {
namespace {

// Retries of a commit record that a backup did not acknowledge: 10 ms, doubling to 1 s.
absl::Duration RetryDelay(int retries) {
  return std::min(absl::Seconds(1), absl::Milliseconds(10) * (1 << std::min(retries, 7)));
}
// Departed senders' retained records are kept this long after the failover.
constexpr absl::Duration kForgetDepartedAfter = absl::Minutes(10);

// Whether `node` holds a replica of one of `regions` in `placement`.
bool ReplicaOfAny(const membership::Placement& placement, NodeId node, absl::Span<const RegionId> regions) {
  for (RegionId region : regions) {
    absl::StatusOr<membership::ReplicaSet> rs = placement.Lookup(region);
    if (rs.ok() && rs->Contains(node)) return true;
  }
  return false;
}

}  // namespace

void ThreadContext::CommitSingleMachine(LogRecord lock, const LogRecord& reads, TxDone done) {
  ++stats_.served_single_machine;
  std::shared_ptr<const membership::Placement> p = placement();
  if (absl::Status s = CheckEpoch(lock.epoch); !s.ok()) return done(s);
  for (const LogEntry& e : lock.entries) {
    if (allocator_->allocator().blocks().FindRegion(e.address.region()) != nullptr) continue;
    if (absl::Status s = CheckNotArriving(e.address.region()); !s.ok()) return done(s);
  }
  if (reads.kind != LogKind::kValidate) return done(absl::InvalidArgumentError("VALIDATE carries a validate record"));
  if (absl::Status s = participant_.Lock(lock, kSharedLock); !s.ok()) return done(s);
  // Readable commit (participant.h): with every object read locked or pinned, the locks
  // stay shared across the backup round trip and the serialization point is the apply,
  // so lock-free lookups keep reading the old values meanwhile instead of waiting.
  absl::StatusOr<bool> readable =
      options_.readable_commits ? participant_.PinReads(lock.transaction, ReadEntriesOf(reads)) : false;
  if (readable.ok() && !*readable) {
    // A read pinned by another transaction (or readable commits off): validation is the
    // serialization point, so from there the writes must not be readable in their old
    // state (a later transaction could overwrite this one's reads and finish while a
    // reader still saw an old value of its writes: a real-time cycle). Exclusive first,
    // then validate.
    ++stats_.exclusive_single_machine;
    (void)participant_.Upgrade(lock.transaction);
    if (absl::Status s = Validate(reads); !s.ok()) readable = s;
  }
  if (!readable.ok()) {
    (void)participant_.Abort(lock.transaction);
    return done(readable.status());
  }
  // The commit record goes whole (every entry, at the versions locked from: the
  // participant's lock record, held until the apply) to every backup of a region it
  // writes: a backup applies its own copies' entries and keeps the rest for failover
  // (retained_commits.h).
  const uint64_t transaction = lock.transaction;
  const LogRecord& held = *participant_.Find(transaction);
  auto rep = std::make_unique<Replication>();
  rep->epoch = held.epoch;
  for (const LogEntry& e : held.entries) {
    const RegionId region = e.address.region();
    if (std::find(rep->regions.begin(), rep->regions.end(), region) != rep->regions.end()) continue;
    absl::StatusOr<membership::ReplicaSet> rs = p->Lookup(region);
    if (!rs.ok() || rs->primary() != self_) {
      (void)participant_.Abort(transaction);
      return done(absl::AbortedError(
          absl::StrFormat("node %d is no longer the primary of %s", self_, e.address.ToString())));
    }
    rep->regions.push_back(region);
    for (NodeId b : rs->backups()) {
      if (std::find(rep->waiting.begin(), rep->waiting.end(), b) == rep->waiting.end()) rep->waiting.push_back(b);
    }
  }
  rep->sequence = sequencer_.Begin();
  if (absl::Status s = EncodeApplyRequest(ApplyHeader(rep->sequence), held, rep->epoch, &rep->payload); !s.ok()) {
    sequencer_.End(rep->sequence);
    (void)participant_.Abort(transaction);
    return done(s);
  }
  // Once a backup has applied the record the decision is commit: nothing takes it back;
  // a backup that does not answer is asked again until it does or leaves the regions'
  // replica sets (RetryApply), and the caller hears "outcome unknown" if that takes
  // longer than rpc_timeout. Only when every backup refused it (applied nothing: a full
  // disk, a fenced epoch) does the transaction abort.
  rep->done = std::move(done);
  std::weak_ptr<ThreadContext*> alive = alive_;
  rep->answer_timer = loop().RunAfter(options_.rpc_timeout, [alive, transaction] {
    if (!alive.expired()) (*alive.lock())->AnswerUnknown(transaction);
  });
  rep->backups = rep->waiting;
  const absl::InlinedVector<NodeId, 4> backups = rep->backups;
  replicating_.emplace(transaction, std::move(rep));
  LogHere(transaction);
  for (NodeId b : backups) SendApply(transaction, b);
}

ApplyRequest ThreadContext::ApplyHeader(uint64_t sequence) const {
  ApplyRequest header;
  header.sender = self_;
  header.sender_thread = static_cast<uint16_t>(thread_->index());
  header.sender_boot = boot_;
  header.sequence = sequence;
  header.watermark = sequencer_.watermark();
  return header;
}

void ThreadContext::LogHere(uint64_t transaction) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  it->second->local = Replication::LocalLog::kPending;
  std::weak_ptr<ThreadContext*> alive = alive_;
  Log(storage::NodeLogType::kTxApplied, *participant_.Find(transaction),
      absl::string_view(it->second->payload).substr(kApplyHeaderBytes), [alive, transaction](const absl::Status& s) {
        if (alive.expired()) return;
        ThreadContext* self = *alive.lock();
        auto it = self->replicating_.find(transaction);
        if (it == self->replicating_.end()) return;
        Replication& r = *it->second;
        r.local = s.ok() ? Replication::LocalLog::kDurable : Replication::LocalLog::kFailed;
        r.local_maybe_durable = storage::MaybeDurable(s);
        if (!s.ok()) {
          FARM_LOG(kWarning, "node %u: transaction %x: its commit record could not be logged here: %s", self->self_,
                   transaction, s.ToString());
          if (r.refusal.ok()) r.refusal = s;
        }
        self->DecideReplication(transaction);
      });
}

void ThreadContext::SendApply(uint64_t transaction, NodeId backup) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  std::weak_ptr<ThreadContext*> alive = alive_;
  if (options_.replication_hook &&
      !options_.replication_hook(ReplicationEvent::kSend, *participant_.Find(transaction), it->second->backups,
                                 backup)) {
    loop().Post([alive, transaction, backup] {
      if (!alive.expired()) {
        (*alive.lock())->OnApplied(transaction, backup, absl::UnavailableError("dropped by the replication hook"));
      }
    });
    return;
  }
  auto answered = [alive, transaction, backup](const absl::Status& s, absl::string_view) {
    if (!alive.expired()) (*alive.lock())->OnApplied(transaction, backup, s);
  };
  absl::Status sent =
      thread_->Call(backup, kTxApplyMsgId, it->second->payload, std::move(answered), options_.rpc_timeout);
  if (!sent.ok()) {
    // `answered` never runs; the retry comes from the loop, not from here.
    loop().Post([alive, transaction, backup, sent] {
      if (!alive.expired()) (*alive.lock())->OnApplied(transaction, backup, sent);
    });
  }
}

namespace {

// An answer that may hide an applied record (the message or its reply was lost).
bool MayHaveApplied(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsCancelled(s);
}

void Erase(absl::InlinedVector<NodeId, 4>& nodes, NodeId n) {
  nodes.erase(std::remove(nodes.begin(), nodes.end(), n), nodes.end());
}

}  // namespace

void ThreadContext::OnApplied(uint64_t transaction, NodeId backup, const absl::Status& s) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  Replication& r = *it->second;
  std::weak_ptr<ThreadContext*> alive = alive_;
  if (s.ok()) {
    if (options_.replication_hook) {
      (void)options_.replication_hook(ReplicationEvent::kAcknowledged, *participant_.Find(transaction), r.backups,
                                      backup);
    }
    Erase(r.waiting, backup);
    Stand(transaction);
    return DecideReplication(transaction);
  }
  r.last_error = absl::Status(s.code(), absl::StrFormat("backup %d: %s", backup, s.message()));
  if (!r.stands && !MayHaveApplied(s)) {
    // A refusal: that backup applied nothing. With every backup refusing, it aborts.
    Erase(r.waiting, backup);
    r.refused.push_back(backup);
    if (r.refusal.ok()) r.refusal = r.last_error;
    return DecideReplication(transaction);
  }
  const int retries = ++r.retries;
  if (retries == 3 || retries % 50 == 0) {
    FARM_LOG(kWarning, "node %u: transaction %x: its commit record has not reached backup %d (%d tries, retrying): %s",
             self_, transaction, backup, retries, s.ToString());
  }
  loop().RunAfter(RetryDelay(retries), [alive, transaction, backup] {
    if (!alive.expired()) (*alive.lock())->RetryApply(transaction, backup);
  });
}

void ThreadContext::Stand(uint64_t transaction) {
  Replication& r = *replicating_.at(transaction);
  r.stands = true;
  // Those that refused it must take it too.
  std::weak_ptr<ThreadContext*> alive = alive_;
  for (NodeId b : r.refused) {
    r.waiting.push_back(b);
    loop().Post([alive, transaction, b] {
      if (!alive.expired()) (*alive.lock())->RetryApply(transaction, b);
    });
  }
  r.refused.clear();
}

void ThreadContext::RetryApply(uint64_t transaction, NodeId backup) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  Replication& r = *it->second;
  if (std::find(r.waiting.begin(), r.waiting.end(), backup) == r.waiting.end()) return;
  std::shared_ptr<const membership::Placement> p = placement();
  if (p != nullptr && (!p->IsMember(backup) || !ReplicaOfAny(*p, backup, r.regions))) {
    // Gone from the replica sets: a member that left holds nothing the cluster uses, and
    // one that moved off the regions gets a whole copy if it returns. It may have applied
    // the record (its answer was lost) and retain it, so the commit stands.
    Erase(r.waiting, backup);
    Stand(transaction);
    return DecideReplication(transaction);
  }
  if (p != nullptr && p->epoch() > r.epoch && p->IsMember(self_) && CheckServing().ok()) {
    // This node lived through a configuration change (a backup that fenced it refuses
    // the older epoch): the record goes on in the new one. A primary that left is never
    // a member of a newer configuration, so its records stay refused.
    r.epoch = p->epoch();
    r.payload.clear();
    if (absl::Status s = EncodeApplyRequest(ApplyHeader(r.sequence), *participant_.Find(transaction), r.epoch,
                                            &r.payload);
        !s.ok()) {
      FARM_LOG(kError, "node %u: transaction %x: its commit record cannot be encoded again: %s", self_, transaction,
               s.ToString());
      return;
    }
  }
  SendApply(transaction, backup);
}

void ThreadContext::DecideReplication(uint64_t transaction) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  Replication& r = *it->second;
  using LocalLog = Replication::LocalLog;
  if (r.stands || r.backups.empty()) {
    // Commit: once every backup has it and this node's log too.
    if (r.local == LocalLog::kFailed && r.stands) {
      // The decision stands (backups have it): try the append again.
      r.local = LocalLog::kPending;
      std::weak_ptr<ThreadContext*> alive = alive_;
      loop().RunAfter(absl::Milliseconds(100), [alive, transaction] {
        if (!alive.expired()) (*alive.lock())->LogHere(transaction);
      });
      return;
    }
    if (r.local == LocalLog::kFailed) return FinishReplication(transaction, /*commit=*/false);  // r = 1
    if (r.waiting.empty() && r.refused.empty() && r.local == LocalLog::kDurable) {
      return FinishReplication(transaction, /*commit=*/true);
    }
    return;
  }
  // No backup has it yet: abort once every one refused it and this node's log is settled.
  if (r.waiting.empty() && r.local != LocalLog::kPending) FinishReplication(transaction, /*commit=*/false);
}

void ThreadContext::FinishReplication(uint64_t transaction, bool commit) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  std::unique_ptr<Replication> r = std::move(it->second);
  replicating_.erase(it);
  sequencer_.End(r->sequence);
  loop().CancelTimer(r->answer_timer);
  TxDone done = std::move(r->done);
  if (commit) {
    // The decision goes into the log before the objects are unlocked, so every later
    // record of them follows it (a checkpoint relies on it: checkpointer.h). It is not
    // waited for: replay applies the kTxApplied record unless an abort follows it.
    if (log_->durable()) log_->AppendUnwaited(storage::NodeLogType::kTxCommitted, EncodeTransactionId(transaction));
    freed_.clear();
    absl::Status s = participant_.Commit(transaction, &freed_);
    if (s.ok()) FreeCommitted(freed_);
    if (done) done(s);
    return;
  }
  // Every backup refused it: nothing is applied anywhere. If this node logged it, the
  // abort after it must be durable before the failure is reported, or replay would
  // apply what was reported failed.
  const absl::Status refusal = r->refusal.ok() ? absl::AbortedError("every backup refused the commit") : r->refusal;
  (void)participant_.Abort(transaction);
  if (r->local != Replication::LocalLog::kDurable) {
    if (!done) return;
    if (!r->local_maybe_durable) return done(refusal);
    // Written here, and the sync failed: a restart may replay it (and then has its
    // backups take it), so it is not an abort.
    return done(absl::UnavailableError(absl::StrFormat(
        "outcome unknown: transaction %x: every backup refused its commit record (%s), and this node's log "
        "failed while syncing it (a restart may commit it)",
        transaction, refusal.message())));
  }
  log_->Append(storage::NodeLogType::kTxAborted, EncodeTransactionId(transaction),
               [refusal, transaction, done = std::move(done)](const absl::Status& s) mutable {
                 if (!done) return;
                 if (s.ok()) return done(refusal);
                 done(absl::UnavailableError(absl::StrFormat(
                     "outcome unknown: transaction %x failed (%s) and its abort could not be logged: %s",
                     transaction, refusal.message(), s.message())));
               });
}

void ThreadContext::AnswerUnknown(uint64_t transaction) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end() || !it->second->done) return;
  Replication& r = *it->second;
  std::exchange(r.done, nullptr)(absl::DeadlineExceededError(absl::StrFormat(
      "outcome unknown: transaction %x: its commit record has not reached backup(s) %s yet (%s); it %s", transaction,
      absl::StrJoin(r.waiting, ","), r.last_error.ToString(),
      r.stands ? "commits once they have it" : "commits or aborts once they answer")));
}

void ThreadContext::ApplyBackup(NodeId sender, uint16_t sender_thread, absl::string_view request, TxDone done) {
  // Every refusal here (an error that is not Unavailable, DeadlineExceeded or Cancelled:
  // those the primary cannot tell from a lost message) means nothing of the record was
  // applied or retained here, so a primary refused by every backup may abort.
  if (gate_ != nullptr && !gate_->serving_at(loop().now_ns())) {
    return done(absl::UnavailableError(absl::StrFormat("node %d is not serving", self_)));
  }
  ApplyRequest header;
  absl::string_view encoded;
  LogRecordView& record = apply_scratch_;
  if (absl::Status s = DecodeApplyRequest(request, &header, &record, &encoded); !s.ok()) return done(s);
  if (header.sender != sender || header.sender_thread != sender_thread) {
    return done(absl::InvalidArgumentError(absl::StrFormat(
        "a commit record request from node %d thread %d names node %d thread %d as its sender", sender,
        sender_thread, header.sender, header.sender_thread)));
  }
  if (maybe_logged_.contains(record.transaction)) return done(MaybeLoggedHere(record.transaction));
  if (record.epoch < fence_epoch_) {
    // Its primary may have failed: the new primaries settle what the copies hold
    // (failover gathers the records retained here, then sends its copy to them).
    return done(absl::AbortedError(absl::StrFormat(
        "a commit of epoch %d refused: node %d recovers from a failure in epoch %d", record.epoch, self_,
        fence_epoch_)));
  }
  absl::StatusOr<size_t> missing = backup_log_.Missing(record);
  if (!missing.ok()) return done(missing.status());
  if (*missing == 0 || !log_->durable()) {
    // Nothing to apply here (regions backed elsewhere, copies still to come whole, or a
    // record sent again that an earlier send applied — after logging it), or no log.
    (void)backup_log_.Apply(record);
    retained_.Retain(sender, sender_thread, header.sequence, header.watermark, encoded);
    return done(absl::OkStatus());
  }
  // Logged first and applied once durable, so that a record the log refuses (a full
  // disk) is applied nowhere here and the primary hears a refusal. Logged with its
  // header (kTxReplicated): a restart then knows which records the sender's watermark
  // had not passed (recovery.h). The record is kept as its bytes and a view of them
  // (the bytes never move while the view is used).
  struct Kept {
    std::string bytes;
    LogRecordView record;
  };
  auto kept = std::make_shared<Kept>();
  kept->bytes.assign(encoded.data(), encoded.size());
  kept->record.kind = record.kind;
  kept->record.transaction = record.transaction;
  kept->record.epoch = record.epoch;
  kept->record.entries.reserve(record.entries.size());
  for (const LogEntryView& e : record.entries) {
    LogEntryView& moved = kept->record.entries.emplace_back(e);
    moved.payload = std::string_view(kept->bytes.data() + (e.payload.data() - encoded.data()), e.payload.size());
  }
  std::weak_ptr<ThreadContext*> alive = alive_;
  log_->Append(storage::NodeLogType::kTxReplicated, request,
               [alive, sender, sender_thread, header, kept, done = std::move(done)](const absl::Status& s) mutable {
                 if (alive.expired()) return done(absl::CancelledError("the node is stopping"));
                 ThreadContext* self = *alive.lock();
                 const LogRecordView& record = kept->record;
                 if (!s.ok()) {
                   // Another send of the record may have been logged and applied meanwhile.
                   absl::StatusOr<size_t> still = self->backup_log_.Missing(record);
                   if (still.ok() && *still > 0 && storage::MaybeDurable(s)) {
                     // Not a refusal, now or later: a restart may replay it here.
                     self->maybe_logged_.insert(record.transaction);
                     return done(self->MaybeLoggedHere(record.transaction));
                   }
                   if (!still.ok() || *still > 0) return done(s);
                 } else if (record.epoch < self->fence_epoch_) {
                   // Fenced while it was being logged: failover may have gathered this
                   // thread's records already, so it must stay unapplied here — and in
                   // the log, which holds it now: a refusal is an abort, logged (durably)
                   // before it is answered, or a restart would replay the record.
                   const absl::Status refused = absl::AbortedError(absl::StrFormat(
                       "a commit of epoch %d refused: node %d recovers from a failure in epoch %d", record.epoch,
                       self->self_, self->fence_epoch_));
                   const uint64_t transaction = record.transaction;
                   return self->log_->Append(
                       storage::NodeLogType::kTxAborted, EncodeTransactionId(transaction),
                       [refused, transaction, done = std::move(done)](const absl::Status& logged) mutable {
                         if (logged.ok()) return done(refused);
                         // Not a refusal then: the record may replay here.
                         done(absl::UnavailableError(absl::StrFormat(
                             "transaction %x: refused after its record was logged here, and the abort could not "
                             "be logged: %s",
                             transaction, logged.message())));
                       });
                 } else if (absl::StatusOr<size_t> applied = self->backup_log_.Apply(record); !applied.ok()) {
                   return done(applied.status());
                 }
                 self->retained_.Retain(sender, sender_thread, header.sequence, header.watermark,
                                        std::move(kept->bytes));
                 done(absl::OkStatus());
               });
}

absl::Status ThreadContext::MaybeLoggedHere(uint64_t transaction) const {
  // Unavailable: the primary cannot tell it from an answer lost, so it never aborts on it.
  return absl::UnavailableError(absl::StrFormat(
      "transaction %x: node %d's log failed while syncing its commit record (it may be durable here)", transaction,
      self_));
}

std::vector<absl::string_view> ThreadContext::RetainedTouching(const absl::flat_hash_set<RegionId>& regions) {
  retained_.Purge(absl::Now());
  return retained_.Touching(regions);
}

void ThreadContext::ApplyRetained(const std::vector<LogRecord>& records, const absl::flat_hash_set<RegionId>& regions,
                                  absl::AnyInvocable<void(absl::StatusOr<size_t>)> done) {
  // What is applied is logged, only the entries of `regions`, so that a restart replays
  // exactly this; `done` once it is durable.
  std::vector<LogRecord> logged;
  size_t count = 0;
  for (const LogRecord& r : records) {
    const size_t n = backup_log_.ApplyMissing(r, regions);
    if (n == 0) continue;
    count += n;
    LogRecord& applied = logged.emplace_back();
    applied.kind = LogKind::kCommit;
    applied.transaction = r.transaction;
    applied.epoch = r.epoch;
    for (const LogEntry& e : r.entries) {
      if (regions.contains(e.address.region())) applied.entries.push_back(e);
    }
  }
  if (logged.empty()) return done(count);
  auto join = StatusJoin::Create(static_cast<int>(logged.size()), [done = std::move(done), count](
                                                                     const absl::Status& s) mutable {
    done(s.ok() ? absl::StatusOr<size_t>(count) : absl::StatusOr<size_t>(s));
  });
  for (const LogRecord& applied : logged) Log(storage::NodeLogType::kTxApplied, applied, "", StatusJoin::Part(join));
}

void ThreadContext::ForgetDeparted(const absl::flat_hash_set<NodeId>& departed) {
  const absl::Time now = absl::Now();
  retained_.Departed(departed, now, kForgetDepartedAfter);
  retained_.Purge(now);
}

}  // namespace farm::tx
