// Transaction::Commit: the coordinator's side of commit (transaction.h).
#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "farm/base/status_join.h"
#include "tx/transaction.h"

namespace farm::tx {

struct Transaction::Plan {
  LogRecord lock;   // every write, alloc and free
  LogRecord reads;  // kValidate: objects only read
  std::vector<NodeId> primaries;  // nodes with entries to commit as primary
  std::vector<NodeId> backups;    // nodes with entries to commit as backup
  NodeId only_primary = kInvalidNode;  // the primary of every object, if there is one
  // The replicas of every region an entry is in.
  absl::flat_hash_map<RegionId, membership::ReplicaSet> replicas;
  // Per node: the lock entries it is primary or backup of (PREPARE), and the read
  // entries it is primary of (VALIDATE). Empty until AddNodeRecords: only a
  // distributed commit, and the validation of a read-only one, needs them (copies of
  // every entry, payloads included, per replica).
  absl::flat_hash_map<NodeId, LogRecord> prepare;
  absl::flat_hash_map<NodeId, LogRecord> validate;
};

namespace {

LogRecord EmptyRecord(LogKind kind, uint64_t transaction, uint64_t epoch) {
  LogRecord r;
  r.kind = kind;
  r.transaction = transaction;
  r.epoch = epoch;
  return r;
}

void AddUnique(std::vector<NodeId>& nodes, NodeId n) {
  if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
}

std::vector<NodeId> Keys(const absl::flat_hash_map<NodeId, LogRecord>& m) {
  std::vector<NodeId> keys;
  keys.reserve(m.size());
  for (const auto& [node, record] : m) keys.push_back(node);
  return keys;
}

// Errors of a shipped commit that say nothing about whether it happened.
bool OutcomeUnknown(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded ||
         s.code() == absl::StatusCode::kCancelled;
}

// An answer that says itself the commit may still complete (single_machine_commit.cc,
// Decide below; and the same text from a remote primary): not a failure.
bool SaysOutcomeUnknown(const absl::Status& s) { return !s.ok() && absl::StartsWith(s.message(), "outcome unknown"); }

}  // namespace

void Transaction::Step(CommitStep step) {
  if (const CommitStepHook& hook = ctx_->options().commit_step_hook) hook(step, id_);
}

absl::StatusOr<Transaction::Plan> Transaction::MakePlan(const membership::Placement& placement) {
  Plan plan;
  plan.lock = EmptyRecord(LogKind::kLock, id_, epoch_);
  plan.reads = EmptyRecord(LogKind::kValidate, id_, epoch_);
  bool one_primary = true;
  auto where = [&](Addr a) -> absl::StatusOr<const membership::ReplicaSet*> {
    auto it = plan.replicas.find(a.region());
    if (it == plan.replicas.end()) {
      absl::StatusOr<membership::ReplicaSet> rs = placement.Lookup(a.region());
      if (!rs.ok()) return rs.status();
      it = plan.replicas.emplace(a.region(), *rs).first;
    }
    const NodeId primary = it->second.primary();
    if (plan.only_primary == kInvalidNode) plan.only_primary = primary;
    one_primary &= plan.only_primary == primary;
    return &it->second;
  };
  for (const std::unique_ptr<TxObject>& o : objects_) {
    if (o->allocated_ && o->freed_) continue;  // never visible
    const bool writes = o->written_ || o->freed_;
    if (!writes && !o->read_) continue;  // a free that failed before it was recorded
    absl::StatusOr<const membership::ReplicaSet*> rs = where(o->ptr_.addr);
    if (!rs.ok()) return rs.status();
    LogEntry e;
    e.address = o->ptr_.addr;
    e.incarnation = o->ptr_.incarnation;
    e.size = o->ptr_.size;
    e.version = o->read_ ? o->version_ : kAnyVersion;
    if (!writes) {
      e.op = LogOp::kWrite;  // not applied: VALIDATE reads address and version only
      plan.reads.entries.push_back(std::move(e));
      continue;
    }
    e.op = o->freed_ ? (o->raw_ ? LogOp::kFreeRaw : LogOp::kFree)
           : o->allocated_ ? (o->raw_ ? LogOp::kAllocRaw : LogOp::kAlloc)
           : o->new_incarnation_ ? LogOp::kWriteNewIncarnation
                                 : LogOp::kWrite;
    if (CarriesPayload(e.op)) e.payload = o->data_;
    AddUnique(plan.primaries, (*rs)->primary());
    for (NodeId b : (*rs)->backups()) AddUnique(plan.backups, b);
    plan.lock.entries.push_back(std::move(e));
  }
  if (plan.lock.entries.size() > kMaxLogEntries || plan.reads.entries.size() > kMaxLogEntries) {
    return absl::OutOfRangeError(absl::StrFormat("a transaction may write and read at most %d objects",
                                                 kMaxLogEntries));
  }
  if (!one_primary) plan.only_primary = kInvalidNode;
  return plan;
}

void Transaction::AddNodeRecords(Plan& plan) {
  for (const LogEntry& e : plan.lock.entries) {
    for (NodeId n : plan.replicas.at(e.address.region()).nodes()) {
      plan.prepare.try_emplace(n, EmptyRecord(LogKind::kLock, id_, epoch_)).first->second.entries.push_back(e);
    }
  }
  for (const LogEntry& e : plan.reads.entries) {
    plan.validate.try_emplace(plan.replicas.at(e.address.region()).primary(),
                              EmptyRecord(LogKind::kValidate, id_, epoch_))
        .first->second.entries.push_back(e);
  }
}

void Transaction::Commit(TxDone done) {
  auto self = shared_from_this();
  if (absl::Status s = CheckActive(); !s.ok()) {
    ctx_->loop().Defer([s, done = std::move(done)]() mutable { done(s); });
    return;
  }
  state_ = State::kCommitting;
  done_ = std::move(done);
  // Always continue from the loop: the continuation never runs inside Commit.
  ctx_->loop().Defer([this, self] {
    std::shared_ptr<const membership::Placement> placement = ctx_->placement();
    if (placement == nullptr) return Finish(absl::UnavailableError("no configuration yet"));
    if (placement->epoch() != epoch_) {
      return Finish(absl::AbortedError(absl::StrFormat(
          "the configuration changed during the transaction (epoch %d, now %d)", epoch_, placement->epoch())));
    }
    absl::StatusOr<Plan> plan = MakePlan(*placement);
    if (!plan.ok()) return Finish(plan.status());
    TxStats& stats = ctx_->stats();
    if (plan->lock.entries.empty()) {
      ++stats.read_only;
      return CommitReadOnly(std::move(*plan));
    }
    if (plan->only_primary == ctx_->self()) {
      ++stats.single_machine;
      LogRecord lock = std::move(plan->lock);
      // "Outcome unknown" (slow backups) keeps what the transaction allocated: the commit
      // goes on, and completes once they answer.
      return ctx_->CommitSingleMachine(std::move(lock), plan->reads, [this, self](const absl::Status& s) {
        Finish(s, /*outcome_known=*/!SaysOutcomeUnknown(s));
      });
    }
    if (const NodeId primary = plan->only_primary; primary != kInvalidNode) {
      ++stats.shipped;
      return Ship(std::move(*plan), primary);
    }
    ++stats.distributed;
    AddNodeRecords(*plan);
    PrepareAll(std::make_shared<Plan>(std::move(*plan)));
  });
}

void Transaction::CommitReadOnly(Plan plan) {
  // One object read: the read itself was the serialization point.
  if (plan.reads.entries.size() <= 1) return Finish(absl::OkStatus());
  AddNodeRecords(plan);
  auto shared = std::make_shared<Plan>(std::move(plan));
  for (auto& [node, record] : shared->validate) record.kind = LogKind::kValidateReadOnly;
  std::vector<NodeId> nodes = Keys(shared->validate);
  Exchange(kTxValidateMsgId, nodes, shared->validate,
           [this](const LogRecord& r, TxDone done) { done(ctx_->Validate(r)); },
           [this, shared](const absl::Status& s) { Finish(s); });
}

void Transaction::Ship(Plan plan, NodeId primary) {
  std::string payload;
  absl::Status encoded = EncodeLogRecord(plan.lock, &payload);
  if (encoded.ok()) encoded = EncodeLogRecord(plan.reads, &payload);
  if (!encoded.ok()) return Finish(encoded);
  auto self = shared_from_this();
  absl::Status sent = ctx_->msg().Call(
      primary, kTxShipMsgId, payload,
      [this, self, primary](const absl::Status& s, absl::string_view) {
        // The primary's own answer says what happened there (it aborts before it answers
        // an error), unless it says itself that the outcome is unknown.
        const bool answered = IsRemoteError(s) && !SaysOutcomeUnknown(s);
        if (s.ok() || !OutcomeUnknown(s) || answered) return Finish(s);
        Finish(absl::Status(s.code(), absl::StrFormat("outcome unknown: the commit shipped to node %d: %s",
                                                      primary, s.message())),
               /*outcome_known=*/false);
      },
      ctx_->options().rpc_timeout);
  // Not sent: nothing happened anywhere.
  if (!sent.ok()) Finish(sent);
}

void Transaction::PrepareAll(std::shared_ptr<Plan> plan) {
  const std::vector<NodeId> participants = Keys(plan->prepare);
  Exchange(
      kTxPrepareMsgId, participants, plan->prepare,
      [this, &participants](const LogRecord& r, TxDone done) { ctx_->Prepare(r, participants, "", std::move(done)); },
      [this, plan](const absl::Status& s) {
        if (!s.ok()) return AbortAll(plan, s);
        Step(CommitStep::kPrepared);
        ValidateAll(plan);
      },
      &participants);
}

void Transaction::ValidateAll(std::shared_ptr<Plan> plan) {
  Exchange(kTxValidateMsgId, Keys(plan->validate), plan->validate,
           [this](const LogRecord& r, TxDone done) { done(ctx_->Validate(r)); },
           [this, plan](const absl::Status& s) {
             if (!s.ok()) return AbortAll(plan, s);
             std::shared_ptr<const membership::Placement> now = ctx_->placement();
             if (now == nullptr || now->epoch() != epoch_) {
               return AbortAll(plan, absl::AbortedError(absl::StrFormat(
                                         "the configuration changed before commit (epoch %d, now %d)",
                                         epoch_, now == nullptr ? 0 : now->epoch())));
             }
             Step(CommitStep::kDecidedCommit);
             Decide(plan, Decision::kCommitBackup);
           });
}

void Transaction::Decide(std::shared_ptr<Plan> plan, Decision decision, absl::Status backups_failed) {
  const TxDecision d{decision, id_};
  const std::vector<NodeId>& nodes = decision == Decision::kCommitBackup ? plan->backups : plan->primaries;
  if (decision == Decision::kCommitBackup) ReportUnknownAfterTimeout();
  // A node that did not take its first send leaves the outcome unknown to the caller
  // (it hears so at once, as before the sends were repeated); the delivery goes on.
  auto unknown = [this](NodeId node, const absl::Status& s) {
    FinishOnce(absl::Status(s.code(), absl::StrFormat("outcome unknown: transaction %x was decided commit, and node "
                                                      "%d has not confirmed it yet (it commits once every replica "
                                                      "has it, or recovery decides): %s",
                                                      id_, node, s.message())),
               /*outcome_known=*/false);
  };
  ExchangeDecision(nodes, d, unknown, [this, plan, decision, backups_failed](const absl::Status& s) {
    if (decision == Decision::kCommitBackup) {
      // From the first COMMIT-BACKUP sent, the decision is commit: a backup may have
      // logged it, and recovery commits a transaction that any replica logged a commit
      // for. COMMIT-PRIMARY goes once every backup has it (or has left the
      // configuration: recovery settles what its copies hold), so no primary makes the
      // writes visible, and releases its locks, while a backup that stays could lack
      // them. A backup that failed makes the outcome unreportable, never undoes it.
      if (s.ok()) Step(CommitStep::kCommitBackupsAcked);
      return Decide(plan, Decision::kCommitPrimary, s);
    }
    if (s.ok() && backups_failed.ok()) return FinishOnce(s, /*outcome_known=*/true);
    const absl::Status& why = backups_failed.ok() ? s : backups_failed;
    FinishOnce(absl::UnavailableError(absl::StrFormat(
                   "outcome unknown: transaction %x was decided commit, but %s did not confirm (recovery "
                   "decides): %s", id_, backups_failed.ok() ? "a primary" : "a backup", why.message())),
               /*outcome_known=*/false);
  });
}

void Transaction::AbortAll(std::shared_ptr<Plan> plan, absl::Status why) {
  // Every node that may hold locks or records of the transaction releases them. The
  // caller hears once each node answered or its first send failed (then the abort is
  // delivered on, until it answers or leaves the configuration).
  ExchangeDecision(
      Keys(plan->prepare), TxDecision{Decision::kAbort, id_},
      [this, why](NodeId, const absl::Status&) { FinishOnce(why, /*outcome_known=*/true); },
      [this, plan, why](const absl::Status&) { FinishOnce(why, /*outcome_known=*/true); });
}

void Transaction::ReportUnknownAfterTimeout() {
  std::weak_ptr<Transaction> weak = weak_from_this();
  report_timer_ = ctx_->loop().RunAfter(ctx_->options().rpc_timeout, [weak] {
    std::shared_ptr<Transaction> self = weak.lock();
    if (self == nullptr) return;
    self->report_timer_ = 0;
    self->FinishOnce(absl::DeadlineExceededError(absl::StrFormat(
                         "outcome unknown: transaction %x was decided commit; its decision is still being "
                         "delivered (it commits once every replica has it)",
                         self->id_)),
                     /*outcome_known=*/false);
  });
}

void Transaction::FinishOnce(const absl::Status& status, bool outcome_known) {
  if (report_timer_ != 0) {
    ctx_->loop().CancelTimer(report_timer_);
    report_timer_ = 0;
  }
  if (state_ != State::kCommitting) return;  // answered already
  Finish(status, outcome_known);
}

void Transaction::Exchange(MsgId id, const std::vector<NodeId>& nodes,
                           const absl::flat_hash_map<NodeId, LogRecord>& records, LocalStep here,
                           TxDone then, const std::vector<NodeId>* participants) {
  absl::Status encoded;
  std::vector<NodeRequest> requests;
  const LogRecord* own = nullptr;
  for (NodeId n : nodes) {
    const LogRecord& r = records.at(n);
    if (n == ctx_->self()) {
      own = &r;
      continue;
    }
    NodeRequest& req = requests.emplace_back();
    req.node = n;
    encoded.Update(participants != nullptr ? EncodePrepare(r, *participants, &req.payload)
                                           : EncodeLogRecord(r, &req.payload));
  }
  if (!encoded.ok()) {
    then = [encoded, then = std::move(then)](const absl::Status&) mutable { then(encoded); };
  }
  TxDone local = JoinLocalAndRemote(std::move(then), &requests, id);
  if (own != nullptr) return here(*own, std::move(local));
  local(absl::OkStatus());
}

void Transaction::ExchangeDecision(const std::vector<NodeId>& nodes, const TxDecision& d, NotYet not_yet,
                                   TxDone then) {
  auto payload = std::make_shared<const std::string>(EncodeDecision(d));
  auto shared_not_yet = std::make_shared<NotYet>(std::move(not_yet));
  const bool own = std::find(nodes.begin(), nodes.end(), ctx_->self()) != nodes.end();
  // The thread's context keeps this transaction while a decision is delivered: its
  // callbacks hold it weakly, so that one left in the loop or a ring at shutdown does not
  // outlive the context it uses.
  if (delivering_++ == 0) ctx_->KeepDelivering(shared_from_this(), this);
  std::weak_ptr<Transaction> weak = weak_from_this();
  auto join = StatusJoin::Create(static_cast<int>(nodes.size()) + (own ? 0 : 1),
                                 [weak, then = std::move(then)](const absl::Status& s) mutable {
                                   std::shared_ptr<Transaction> self = weak.lock();
                                   if (self == nullptr) return;
                                   if (--self->delivering_ == 0) self->ctx_->ReleaseDelivering(self.get());
                                   then(s);
                                 });
  for (NodeId n : nodes) {
    if (n != ctx_->self()) DeliverDecision(n, d.decision, payload, 0, shared_not_yet, StatusJoin::Part(join));
  }
  if (d.decision == Decision::kCommitBackup) Step(CommitStep::kCommitBackupSent);
  if (d.decision == Decision::kCommitPrimary) Step(CommitStep::kCommitPrimarySent);
  if (own) return ctx_->Decide(d, StatusJoin::Part(join));
  join->Arrive(absl::OkStatus());
}

void Transaction::DeliverDecision(NodeId node, Decision decision, std::shared_ptr<const std::string> payload,
                                  int attempt, std::shared_ptr<NotYet> not_yet, TxDone done) {
  std::weak_ptr<Transaction> weak = weak_from_this();
  auto answered = [weak, node, decision, payload, attempt, not_yet, done = std::move(done)](
                      const absl::Status& s) mutable {
    std::shared_ptr<Transaction> self = weak.lock();
    if (self == nullptr) return;  // its context is gone (the node stops)
    if (s.ok()) return done(s);
    if (IsRemoteError(s)) {
      // The node's own answer. Its "no such transaction" to a commit is an earlier send
      // of this decision that got there first (decisions are idempotent).
      if (decision != Decision::kAbort && absl::IsNotFound(s)) return done(absl::OkStatus());
      return done(s);
    }
    // Lost with a link, refused by a full ring, or unanswered: sent again while the node
    // is a member. One that left is recovery's to settle.
    if (attempt == 0 && *not_yet) (*not_yet)(node, s);
    std::shared_ptr<const membership::Placement> placement = self->ctx_->placement();
    if (placement == nullptr || !placement->IsMember(node)) {
      return done(absl::UnavailableError(absl::StrFormat(
          "node %d left the configuration before it confirmed the decision on transaction %x: %s", node, self->id_,
          s.message())));
    }
    const absl::Duration backoff = std::min(absl::Milliseconds(1) * (int64_t{1} << std::min(attempt, 7)),
                                            absl::Milliseconds(100));
    self->ctx_->loop().RunAfter(backoff, [weak, node, decision, payload, attempt, not_yet,
                                          done = std::move(done)]() mutable {
      if (std::shared_ptr<Transaction> again = weak.lock()) {
        again->DeliverDecision(node, decision, payload, attempt + 1, not_yet, std::move(done));
      }
    });
  };
  if (const DecisionHook& hook = ctx_->options().decision_hook; hook && !hook(decision, id_, node)) {
    return ctx_->loop().Defer([answered = std::move(answered)]() mutable {
      answered(absl::UnavailableError("the decision was dropped (test seam)"));
    });
  }
  auto shared = std::make_shared<decltype(answered)>(std::move(answered));
  absl::Status sent = ctx_->msg().Call(
      node, kTxDecideMsgId, *payload, [shared](const absl::Status& s, absl::string_view) { (*shared)(s); },
      ctx_->options().rpc_timeout);
  if (!sent.ok()) {
    // Not sent (Call calls nothing then): the same, from the loop.
    ctx_->loop().Defer([shared, sent] { (*shared)(sent); });
  }
}

TxDone Transaction::JoinLocalAndRemote(TxDone then, std::vector<NodeRequest>* requests, MsgId id) {
  auto join = StatusJoin::Create(
      2, [self = shared_from_this(), then = std::move(then)](const absl::Status& s) mutable { then(s); });
  CallAll(ctx_->msg(), id, std::move(*requests), StatusJoin::Part(join), ctx_->options().rpc_timeout);
  return StatusJoin::Part(join);
}

}  // namespace farm::tx
