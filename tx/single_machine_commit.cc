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
#include "tx/thread_context.h"

namespace farm::tx {
namespace {

// Retries of a commit record that a backup did not acknowledge: 10 ms, doubling to 1 s.
absl::Duration RetryDelay(int retries) {
  return std::min(absl::Seconds(1), absl::Milliseconds(10) * (1 << std::min(retries, 7)));
}
// Departed senders' retained records are kept this long after the failover.
constexpr absl::Duration kForgetDepartedAfter = absl::Minutes(10);

// Whether `node` holds a replica of a region that `record` writes, in `placement`.
bool ReplicaOfAny(const membership::Placement& placement, NodeId node, const LogRecord& record) {
  for (const LogEntry& e : record.entries) {
    absl::StatusOr<membership::ReplicaSet> rs = placement.Lookup(e.address.region());
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
  // The commit record goes whole (every entry, at the versions locked from) to every
  // backup of a region it writes: a backup applies its own copies' entries and keeps the
  // rest for failover (retained_commits.h).
  const uint64_t transaction = lock.transaction;
  auto rep = std::make_unique<Replication>();
  rep->record = *participant_.Find(transaction);
  rep->record.kind = LogKind::kCommit;
  for (const LogEntry& e : rep->record.entries) {
    absl::StatusOr<membership::ReplicaSet> rs = p->Lookup(e.address.region());
    if (!rs.ok() || rs->primary() != self_) {
      (void)participant_.Abort(transaction);
      return done(absl::AbortedError(
          absl::StrFormat("node %d is no longer the primary of %s", self_, e.address.ToString())));
    }
    for (NodeId b : rs->backups()) {
      if (std::find(rep->waiting.begin(), rep->waiting.end(), b) == rep->waiting.end()) rep->waiting.push_back(b);
    }
  }
  rep->sequence = sequencer_.Begin();
  if (absl::Status s = EncodeApplyRequest(rep->sequence, sequencer_.watermark(), rep->record, &rep->payload);
      !s.ok()) {
    sequencer_.End(rep->sequence);
    (void)participant_.Abort(transaction);
    return done(s);
  }
  // From the first send on, the decision is commit: a backup may apply the record on
  // arrival. Nothing takes it back; a backup that does not answer is asked again until
  // it does or leaves the region's replica set (RetryApply), and the caller hears
  // "outcome unknown" if that takes longer than rpc_timeout.
  rep->done = std::move(done);
  std::weak_ptr<ThreadContext*> alive = alive_;
  rep->answer_timer = loop().RunAfter(options_.rpc_timeout, [alive, transaction] {
    if (!alive.expired()) (*alive.lock())->AnswerUnknown(transaction);
  });
  rep->backups = rep->waiting;
  const absl::InlinedVector<NodeId, 4> backups = rep->backups;
  Replication& r = *replicating_.emplace(transaction, std::move(rep)).first->second;
  LogHere(transaction, r);
  for (NodeId b : backups) SendApply(transaction, b);
}

void ThreadContext::LogHere(uint64_t transaction, Replication& r) {
  std::weak_ptr<ThreadContext*> alive = alive_;
  Log(storage::NodeLogType::kTxApplied, r.record, absl::string_view(r.payload).substr(kApplyHeaderBytes),
      [alive, transaction](const absl::Status& s) {
        if (alive.expired()) return;
        ThreadContext* self = *alive.lock();
        auto it = self->replicating_.find(transaction);
        if (it == self->replicating_.end()) return;
        if (s.ok()) {
          it->second->logged_here = true;
          return self->FinishIfReplicated(transaction);
        }
        // The decision stands (backups may have it): try the append again.
        FARM_LOG(kWarning, "node %u: transaction %x: its commit record could not be logged (retrying): %s",
                 self->self_, transaction, s.ToString());
        self->loop().RunAfter(absl::Milliseconds(100), [alive, transaction] {
          if (alive.expired()) return;
          ThreadContext* self = *alive.lock();
          auto it = self->replicating_.find(transaction);
          if (it != self->replicating_.end()) self->LogHere(transaction, *it->second);
        });
      });
}

void ThreadContext::SendApply(uint64_t transaction, NodeId backup) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  std::weak_ptr<ThreadContext*> alive = alive_;
  if (options_.replication_hook &&
      !options_.replication_hook(ReplicationEvent::kSend, it->second->record, it->second->backups, backup)) {
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

void ThreadContext::OnApplied(uint64_t transaction, NodeId backup, const absl::Status& s) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  Replication& r = *it->second;
  if (s.ok()) {
    if (options_.replication_hook) {
      (void)options_.replication_hook(ReplicationEvent::kAcknowledged, r.record, r.backups, backup);
    }
    r.waiting.erase(std::remove(r.waiting.begin(), r.waiting.end(), backup), r.waiting.end());
    return FinishIfReplicated(transaction);
  }
  r.last_error = absl::Status(s.code(), absl::StrFormat("backup %d: %s", backup, s.message()));
  const int retries = ++r.retries;
  if (retries == 3 || retries % 50 == 0) {
    FARM_LOG(kWarning, "node %u: transaction %x: its commit record has not reached backup %d (%d tries, retrying): %s",
             self_, transaction, backup, retries, s.ToString());
  }
  std::weak_ptr<ThreadContext*> alive = alive_;
  loop().RunAfter(RetryDelay(retries), [alive, transaction, backup] {
    if (!alive.expired()) (*alive.lock())->RetryApply(transaction, backup);
  });
}

void ThreadContext::RetryApply(uint64_t transaction, NodeId backup) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end()) return;
  Replication& r = *it->second;
  std::shared_ptr<const membership::Placement> p = placement();
  if (p != nullptr && (!p->IsMember(backup) || !ReplicaOfAny(*p, backup, r.record))) {
    // Gone from the replica sets: a member that left holds nothing the cluster uses, and
    // one that moved off the regions gets a whole copy if it returns.
    r.waiting.erase(std::remove(r.waiting.begin(), r.waiting.end(), backup), r.waiting.end());
    return FinishIfReplicated(transaction);
  }
  if (p != nullptr && p->epoch() > r.record.epoch && p->IsMember(self_) && CheckServing().ok()) {
    // This node lived through a configuration change (a backup that fenced it refuses
    // the older epoch): the record goes on in the new one. A primary that left is never
    // a member of a newer configuration, so its records stay refused.
    r.record.epoch = p->epoch();
    r.payload.clear();
    if (absl::Status s = EncodeApplyRequest(r.sequence, sequencer_.watermark(), r.record, &r.payload); !s.ok()) {
      FARM_LOG(kError, "node %u: transaction %x: its commit record cannot be encoded again: %s", self_, transaction,
               s.ToString());
      return;
    }
  }
  SendApply(transaction, backup);
}

void ThreadContext::FinishIfReplicated(uint64_t transaction) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end() || !it->second->waiting.empty() || !it->second->logged_here) return;
  std::unique_ptr<Replication> r = std::move(it->second);
  replicating_.erase(it);
  // The decision goes into the log before the objects are unlocked, so every later
  // record of them follows it (a checkpoint relies on it: checkpointer.h). It is not
  // waited for: replay applies the kTxApplied record unless an abort follows it.
  if (log_->durable()) log_->AppendUnwaited(storage::NodeLogType::kTxCommitted, EncodeTransactionId(transaction));
  freed_.clear();
  absl::Status s = participant_.Commit(transaction, &freed_);
  if (s.ok()) FreeCommitted(freed_);
  sequencer_.End(r->sequence);
  loop().CancelTimer(r->answer_timer);
  if (r->done) r->done(s);
}

void ThreadContext::AnswerUnknown(uint64_t transaction) {
  auto it = replicating_.find(transaction);
  if (it == replicating_.end() || !it->second->done) return;
  Replication& r = *it->second;
  std::exchange(r.done, nullptr)(absl::DeadlineExceededError(absl::StrFormat(
      "outcome unknown: transaction %x commits once its commit record reaches backup(s) %s (%s)", transaction,
      absl::StrJoin(r.waiting, ","), r.logged_here ? r.last_error.ToString() : "and this node's log")));
}

void ThreadContext::ApplyBackup(NodeId sender, uint16_t sender_thread, ApplyRequest request,
                                absl::string_view encoded, TxDone done) {
  if (gate_ != nullptr && !gate_->serving()) {
    return done(absl::UnavailableError(absl::StrFormat("node %d is not serving", self_)));
  }
  if (request.record.epoch < fence_epoch_) {
    // Its primary may have failed: the new primaries settle what the copies hold
    // (failover gathers the records retained here, then sends its copy to them).
    return done(absl::AbortedError(absl::StrFormat(
        "a commit of epoch %d refused: node %d recovers from a failure in epoch %d", request.record.epoch, self_,
        fence_epoch_)));
  }
  absl::StatusOr<size_t> here = backup_log_.Apply(request.record);
  if (!here.ok()) return done(here.status());
  if (*here == 0) {
    done(absl::OkStatus());  // its copies here are still to come, whole, the commit in them
  } else {
    Log(storage::NodeLogType::kTxApplied, request.record, encoded, std::move(done));
  }
  retained_.Retain(sender, sender_thread, request.sequence, request.watermark, std::move(request.record));
}

std::vector<const LogRecord*> ThreadContext::RetainedTouching(const absl::flat_hash_set<RegionId>& regions) {
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
