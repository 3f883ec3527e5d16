#include "tx/thread_context.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/msg/call_all.h"

namespace farm::tx {

ThreadContext::ThreadContext(NodeId self, MsgThread* thread, alloc::ThreadAllocator* allocator,
                             const alloc::BackupRegions* copies, std::unique_ptr<ObjectReader> reader,
                             const TxOptions& options)
    : self_(self),
      thread_(thread),
      allocator_(allocator),
      reader_(std::move(reader)),
      options_(options),
      participant_(&allocator->allocator().blocks()),
      backup_log_(copies),
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
  return (uint64_t{self_} << 48) | (uint64_t{thread_->index()} << 40) |
         (next_transaction_++ & ((uint64_t{1} << 40) - 1));
}

absl::Status ThreadContext::CheckEpoch(uint64_t epoch) const {
  std::shared_ptr<const membership::Placement> p = placement();
  const uint64_t now = p == nullptr ? 0 : p->epoch();
  if (epoch == now) return absl::OkStatus();
  return absl::AbortedError(absl::StrFormat(
      "the configuration changed (transaction in epoch %d, node %d in epoch %d)", epoch, self_, now));
}

absl::Status ThreadContext::Prepare(const LogRecord& record) {
  if (record.kind != LogKind::kLock) return absl::InvalidArgumentError("PREPARE carries a lock record");
  if (absl::Status s = CheckEpoch(record.epoch); !s.ok()) return s;
  ++stats_.served_prepares;
  LogRecord primary, backup;
  primary.kind = backup.kind = LogKind::kLock;
  primary.transaction = backup.transaction = record.transaction;
  primary.epoch = backup.epoch = record.epoch;
  const alloc::BlockAllocator& blocks = allocator_->allocator().blocks();
  for (const LogEntry& e : record.entries) {
    (blocks.FindRegion(e.address.region()) != nullptr ? primary : backup).entries.push_back(e);
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

absl::Status ThreadContext::Validate(const LogRecord& reads) {
  if (reads.kind != LogKind::kValidate) return absl::InvalidArgumentError("VALIDATE carries a validate record");
  if (absl::Status s = CheckEpoch(reads.epoch); !s.ok()) return s;
  std::vector<ReadEntry> entries;
  entries.reserve(reads.entries.size());
  for (const LogEntry& e : reads.entries) entries.push_back(ReadEntry{e.address, e.version});
  return participant_.Validate(reads.transaction, entries);
}

void ThreadContext::FreeCommitted(const std::vector<FatPtr>& freed) {
  for (const FatPtr& p : freed) {
    // The object was locked and allocated at this incarnation a moment ago: a failure
    // here is a bug elsewhere, reported but not fatal to the committed transaction.
    if (absl::Status s = allocator_->FreeLocal(p); !s.ok()) {
      absl::FPrintF(stderr, "node %d: free of %s committed but failed: %s\n", self_, p.ToString(),
                    s.ToString());
    }
  }
}

absl::Status ThreadContext::Decide(const TxDecision& d) {
  switch (d.decision) {
    case Decision::kCommitBackup:
      return backup_log_.Commit(d.transaction);
    case Decision::kCommitPrimary: {
      freed_.clear();
      if (absl::Status s = participant_.Commit(d.transaction, &freed_); !s.ok()) return s;
      FreeCommitted(freed_);
      return absl::OkStatus();
    }
    case Decision::kAbort:
      (void)participant_.Abort(d.transaction);
      (void)backup_log_.Abort(d.transaction);
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown decision");
}

void ThreadContext::CommitSingleMachine(LogRecord lock, const LogRecord& reads, TxDone done) {
  ++stats_.served_single_machine;
  std::shared_ptr<const membership::Placement> p = placement();
  if (absl::Status s = CheckEpoch(lock.epoch); !s.ok()) return done(s);
  if (absl::Status s = participant_.Lock(lock, kSharedLock); !s.ok()) return done(s);
  if (absl::Status s = Validate(reads); !s.ok()) {
    (void)participant_.Abort(lock.transaction);
    return done(s);
  }
  // Validation is the serialization point: from here the writes must not be readable
  // in their old state. Shared locks held across the backup round trip (the paper's
  // dual modes as written) let a lock-free reader see the old value of a write after a
  // later transaction overwrote this one's read set and finished — a real-time cycle
  // the serializability test found.
  (void)participant_.Upgrade(lock.transaction);
  // The commit record, per backup node, with the entries of the regions it backs.
  absl::flat_hash_map<NodeId, LogRecord> per_backup;
  for (const LogEntry& e : lock.entries) {
    absl::StatusOr<membership::ReplicaSet> rs = p->Lookup(e.address.region());
    if (!rs.ok() || rs->primary() != self_) {
      (void)participant_.Abort(lock.transaction);
      return done(absl::AbortedError(absl::StrFormat(
          "node %d is no longer the primary of %s", self_, e.address.ToString())));
    }
    for (NodeId b : rs->backups()) {
      LogRecord& r = per_backup[b];
      r.kind = LogKind::kCommit;
      r.transaction = lock.transaction;
      r.epoch = lock.epoch;
      r.entries.push_back(e);
    }
  }
  std::vector<NodeRequest> requests;
  for (auto& [node, record] : per_backup) {
    NodeRequest& req = requests.emplace_back();
    req.node = node;
    if (absl::Status s = EncodeLogRecord(record, &req.payload); !s.ok()) {
      (void)participant_.Abort(lock.transaction);
      return done(s);
    }
  }
  const uint64_t transaction = lock.transaction;
  std::weak_ptr<ThreadContext*> alive = alive_;
  CallAll(
      *thread_, kTxApplyMsgId, std::move(requests),
      [alive, transaction, done = std::move(done)](const absl::Status& replicated) mutable {
        if (alive.expired()) return done(absl::CancelledError("the node is stopping"));
        ThreadContext* self = *alive.lock();
        if (!replicated.ok()) {
          (void)self->participant_.Abort(transaction);
          return done(absl::Status(replicated.code(),
                                   absl::StrCat("the commit record did not reach every backup: ",
                                                replicated.message())));
        }
        self->freed_.clear();
        absl::Status s = self->participant_.Commit(transaction, &self->freed_);
        if (s.ok()) self->FreeCommitted(self->freed_);
        done(s);
      },
      options_.rpc_timeout);
}

}  // namespace farm::tx
