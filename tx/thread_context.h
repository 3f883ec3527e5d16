// ThreadContext: everything one worker thread needs to run transactions and to take
// part in other nodes' transactions — its messaging thread, allocator, lock-free
// reader, Participant (objects this node is primary of) and BackupLog (objects it holds
// backup copies of). The public API's calls take it (farm/api/farm.h).
//
// Participant side, used by the handlers (tx_service.h) and directly by a coordinator
// on this node:
//   Prepare(record)  lock the entries this node is primary of (exclusive: a
//                    distributed transaction's primaries apply one by one, so lock-free
//                    readers must not see any of its objects until all are applied),
//                    keep those it holds backups of. All or nothing. Done once the lock
//                    record is durable here.
//   Validate(record) check read versions of objects this node is primary of.
//   Decide(d)        commit as backup (apply to the copies, done once the decision is
//                    durable) / as primary (apply only once the decision is durable: a
//                    write becomes readable only when its commit survives a crash), or
//                    abort (abort of an unknown transaction is OK: a prepare that failed
//                    left nothing; the abort record is not waited for).
//   CommitSingleMachine  a transaction whose objects all have this node as primary:
//                    lock (shared mode), validate while pinning the objects read but not
//                    written, send the commit record to the backups and log it here,
//                    wait for both, then apply (participant.h) — no remote LOCK or
//                    VALIDATE. The locks stay shared (lock-free readers see the old
//                    values) across the backup round trip: with everything it read held,
//                    its serialization point is the apply (participant.h, "Readable
//                    commits"). When a read is pinned by another transaction, the locks
//                    are upgraded to exclusive and the reads validated again instead:
//                    validation is then the serialization point, so a lock-free reader
//                    must not see the old value of a write after it. Once a backup
//                    may have applied the record (it acknowledged, or its answer was
//                    lost) the decision is commit: a backup that does not acknowledge is
//                    asked again until it does or leaves the regions' replica sets, and
//                    only then does this node apply; the caller hears "outcome unknown"
//                    (DeadlineExceeded) if that takes longer than rpc_timeout. Only when
//                    every backup refused the record (applied nothing: its log full, a
//                    fenced epoch) does the commit abort, its abort logged after this
//                    node's record. Each backup gets the whole record and retains it
//                    until the primary's watermark passes it, for failover
//                    (retained_commits.h).
//   ApplyBackup      a backup's side of it: logs the record, applies the entries of its
//                    copies once that is durable, retains it; any error but
//                    Unavailable, DeadlineExceeded or Cancelled is a refusal.
//
// Durability (the node's log, storage/node_log_types.h): every replica the protocol
// writes to logs what it received, and answers only once that is durable — so a
// commit the coordinator reports has its records durable at every primary and backup
// of its writes (FaRM's rule asks this of the backups before COMMIT-PRIMARY; with r = 1
// there are none, so the primaries' own records must be durable too). Without a log
// (ThreadLog::durable() false) the same code runs with nothing written.
// Every request whose epoch is not this node's current one is refused (Aborted): a
// configuration change aborts transactions that span it, never commits them in part.
//
// Threads: owned by the node, used only on its worker thread.
#ifndef FARM_TX_THREAD_CONTEXT_H_
#define FARM_TX_THREAD_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "alloc/allocator.h"
#include "alloc/backup_regions.h"
#include "alloc/thread_allocator.h"
#include "alloc/thread_log.h"
#include "farm/event/context.h"
#include "farm/msg/msg_thread.h"
#include "membership/membership.h"
#include "membership/placement.h"
#include "tx/backup_log.h"
#include "tx/log_record.h"
#include "tx/object_reader.h"
#include "tx/one_sided.h"
#include "tx/participant.h"
#include "tx/recent_commits.h"
#include "tx/recovery_locks.h"
#include "tx/retained_commits.h"
#include "tx/tx_messages.h"
#include "tx/tx_object_pool.h"

namespace farm::tx {

// The steps of a distributed commit at its coordinator (commit.cc), for CommitStepHook.
enum class CommitStep {
  kPrepared,           // every PREPARE answered OK; VALIDATE next
  kDecidedCommit,      // validated: COMMIT-BACKUP about to be sent
  kCommitBackupSent,   // COMMIT-BACKUP sent to every backup, no answer yet
  kCommitBackupsAcked, // every backup answered COMMIT-BACKUP (logged the commit)
  kCommitPrimarySent,  // COMMIT-PRIMARY sent to every primary, no answer yet
};
// A test seam: called on the coordinator's thread at each step, with the transaction;
// crash tests end the process there (SIGKILL) to leave a commit half done.
using CommitStepHook = std::function<void(CommitStep step, uint64_t transaction)>;

// A test seam of single-machine commits (CommitSingleMachine), called on the primary's
// thread: before each send of the commit record to a backup (kSend; false drops that
// send as if the backup had not answered, and it is retried), and when a backup
// acknowledged it (kAcknowledged; the result is ignored). `backups`: every backup the
// record goes to, in the order of the regions it writes. Crash tests end the process.
enum class ReplicationEvent { kSend, kAcknowledged };
using ReplicationHook = std::function<bool(ReplicationEvent event, const LogRecord& record,
                                           absl::Span<const NodeId> backups, NodeId backup)>;

// A test seam of a distributed commit's decisions (commit.cc), called on the
// coordinator's thread before each send of a decision to another node: false drops that
// send as a lost message (the link failed with it), and it is sent again.
using DecisionHook = std::function<bool(Decision decision, uint64_t transaction, NodeId node)>;

struct TxOptions {
  // How long a coordinator waits for a participant before it aborts the transaction.
  absl::Duration rpc_timeout = absl::Seconds(5);
  ObjectReaderOptions reader;
  // Single-machine commits keep their locks readable by lock-free readers across the
  // backup round trip (participant.h, "Readable commits"); false: exclusive from
  // validation on, as FaRM does (for comparison).
  bool readable_commits = true;
  CommitStepHook commit_step_hook;  // tests only; empty: none
  ReplicationHook replication_hook;  // tests only; empty: none
  DecisionHook decision_hook;        // tests only; empty: none
};

struct TxStats {
  uint64_t committed = 0;
  uint64_t aborted = 0;           // commits that ended in an error
  uint64_t read_only = 0;
  uint64_t single_machine = 0;    // committed here as the primary of every object
  uint64_t shipped = 0;           // single-machine commits sent to the objects' primary
  uint64_t distributed = 0;
  uint64_t lock_free_reads = 0;
  uint64_t served_prepares = 0;   // participant side
  uint64_t served_single_machine = 0;
  // Of those, commits whose locks were exclusive across the backup round trip: a read
  // was pinned by another transaction (participant.h, "Readable commits"), or
  // TxOptions::readable_commits is off.
  uint64_t exclusive_single_machine = 0;
};

using TxDone = absl::AnyInvocable<void(const absl::Status&)>;

// The node that coordinates `transaction` (ThreadContext::NewTransactionId's layout).
constexpr NodeId CoordinatorOf(uint64_t transaction) { return static_cast<NodeId>(transaction >> 44); }

// What a configuration that lost members tells each worker thread, before the node
// uses its placement (failover; tx_service.h has the protocol).
struct FailoverFence {
  uint64_t epoch = 0;                         // the new configuration's
  absl::flat_hash_set<NodeId> departed;       // members of the previous one that left
  absl::flat_hash_set<RegionId> promoting;    // backup copies here about to become primary
};

// A transaction whose fate failover recovery decides on this thread.
struct RecoveringTx {
  uint64_t transaction = 0;
  uint64_t epoch = 0;                 // the transaction's
  std::vector<NodeId> participants;   // every node its PREPARE went to
};

class ThreadContext final : public Context {
 public:
  // `boot` (the node's start number on its data directory) keeps transaction ids of
  // one start from repeating those of another in the logs.
  ThreadContext(NodeId self, MsgThread* thread, alloc::ThreadAllocator* allocator,
                const alloc::BackupRegions* copies, std::unique_ptr<ObjectReader> reader,
                const TxOptions& options, alloc::ThreadLog* log, uint32_t boot = 0);
  ~ThreadContext();

  // --- Context (the application's view) ---
  NodeId self() const override { return self_; }
  size_t thread_index() const override { return thread_->index(); }
  bool transactional() const override { return true; }
  std::vector<NodeId> members() const override;
  void Post(Work work) override { loop().Post(std::move(work)); }
  void Defer(Work work) override { loop().Defer(std::move(work)); }
  TimerId RunAfter(absl::Duration delay, Work work) override {
    return loop().RunAfter(delay, std::move(work));
  }
  bool CancelTimer(TimerId id) override { return loop().CancelTimer(id); }
  absl::Status WatchFd(int fd, Work on_ready) override { return loop().WatchFd(fd, std::move(on_ready)); }
  void UnwatchFd(int fd) override { loop().UnwatchFd(fd); }

  // --- The layers' view ---
  MsgThread& msg() const { return *thread_; }
  EventLoop& loop() const { return thread_->loop(); }
  alloc::ThreadAllocator& allocator() const { return *allocator_; }
  ObjectReader& reader() const { return *reader_; }
  // The transactions' spare object copies (Transaction::Insert and its destructor).
  TxObjectPool& spare_objects() { return spare_objects_; }
  // Transactions whose decisions are still being delivered after their caller heard
  // (commit.cc): owned here, not by callbacks waiting in the loop or the rings, so that
  // none outlives this context. Release drops one (it may be destroyed then).
  void KeepDelivering(std::shared_ptr<void> transaction, const void* key) {
    delivering_.emplace(key, std::move(transaction));
  }
  void ReleaseDelivering(const void* key) { delivering_.erase(key); }
  // The thread's one-sided ops (farm/api/one_sided.h); null when the node made none.
  OneSidedAccess* one_sided() const { return one_sided_.get(); }
  // Before use, on this thread (TxService::Create).
  void set_one_sided(std::unique_ptr<OneSidedAccess> access) {
    one_sided_ = std::move(access);
    if (one_sided_ != nullptr) one_sided_->set_gate(gate_);
  }
  const TxOptions& options() const { return options_; }
  TxStats& stats() { return stats_; }
  const Participant& participant() const { return participant_; }
  const BackupLog& backup_log() const { return backup_log_; }
  // The configuration's placement now (null before the first).
  std::shared_ptr<const membership::Placement> placement() const;
  // Unavailable when this node does not serve (ServingGate): lease lost, or not a member.
  absl::Status CheckServing() const;
  // Cluster-unique: node (20 bits), thread (6), boot (8, wraps), counter (30; a thread
  // that runs 2^30 transactions in one start reaches the next start's ids).
  uint64_t NewTransactionId();

  // `encoded` is the record's encoding when the caller has it (a request's payload),
  // else empty. Every `done` on this thread, maybe before returning.
  // `participants`: every node the transaction's PREPARE goes to (logged with the
  // record for recovery).
  void Prepare(const LogRecord& record, const std::vector<NodeId>& participants, absl::string_view encoded,
               TxDone done);
  absl::Status Validate(const LogRecord& reads);
  void Decide(const TxDecision& decision, TxDone done);
  // kTxApplyMsgId's `request` (tx_messages.h) from thread `sender_thread` of `sender`;
  // decoded here, without a copy unless the record is kept.
  void ApplyBackup(NodeId sender, uint16_t sender_thread, absl::string_view request, TxDone done);
  // `reads` is a kValidate record.
  void CommitSingleMachine(LogRecord lock, const LogRecord& reads, TxDone done);

  // Recovery, on this thread before the node serves: takes over a transaction left in
  // doubt by a crash — its locks here (`primary`: entries locked already, at the
  // versions they were locked from) and its records for backup copies — so that a later
  // Decide settles it like any other.
  absl::Status RestoreInDoubt(LogRecord primary, LogRecord backup, const std::vector<NodeId>& participants = {});

  // Failover, on this thread, before the node adopts the new configuration: every
  // transaction with locks or a kept record here whose coordinator or some participant
  // departed is recovering — recovery decides it (SettleRecovered), its coordinator can
  // no longer commit it here (an abort is still taken) — and its entries in `promoting`
  // regions are locked (RecoveryLocks) and their allocations marked, so the promoted
  // region's allocator scan keeps them. From here requests of an earlier epoch than
  // `fence.epoch` are refused (Aborted), single-machine replication included.
  absl::Status FenceForFailover(const FailoverFence& fence);
  std::vector<RecoveringTx> Recovering() const;
  // Failover (retained_commits.h): the single-machine commit records retained here with
  // an entry in one of `regions`, encoded; valid until this thread handles another
  // message.
  std::vector<absl::string_view> RetainedTouching(const absl::flat_hash_set<RegionId>& regions);
  // Failover, at a new primary before its promoted `regions` serve: applies the entries
  // of `records` in `regions` that the backup copies here lack, and logs them; `done`
  // (on this thread) with the number applied once that is durable.
  void ApplyRetained(const std::vector<LogRecord>& records, const absl::flat_hash_set<RegionId>& regions,
                     absl::AnyInvocable<void(absl::StatusOr<size_t>)> done);
  // Whether a record kept here for backup copies has an entry in `region` (a region copy
  // must not begin under it: its decision would be applied to the copied bytes).
  bool KeepsRecordsIn(RegionId region) const;
  uint64_t fence_epoch() const { return fence_epoch_; }
  // Recovery's decision for a recovering transaction: applies (commit) or drops (abort)
  // its records and locks here, logs the decision, and remembers a commit in
  // RecentCommits. OK for one decided meanwhile (its coordinator aborted it).
  void SettleRecovered(uint64_t transaction, bool commit, TxDone done);
  // Node-wide state shared by the node's threads (owned by TxService); before use.
  void SetShared(RecentCommits* recent, RecoveryLocks* recovery_locks) {
    recent_ = recent;
    recovery_locks_ = recovery_locks;
  }
  // The node's serving gate (membership.h), on this thread: from then on a node that does
  // not serve (lease lost, or not a member) refuses PREPARE, VALIDATE, shipped and
  // replicated commits (Unavailable), and its lock-free reads answer Unavailable.
  void SetGate(const membership::ServingGate* gate) {
    gate_ = gate;
    reader_->set_gate(gate);
    if (one_sided_ != nullptr) one_sided_->set_gate(gate);
  }

 private:
  absl::Status CheckEpoch(uint64_t epoch) const;
  // Unavailable when this node's configuration makes it the primary of `region`, which it
  // does not hold (yet): a handover or promotion is under way (node/failover.cc).
  absl::Status CheckNotArriving(RegionId region);
  // Unavailable when this node's configuration makes it a backup of `region`, whose copy
  // it does not hold yet (re-replication is copying it here): the PREPARE is retryable.
  absl::Status CheckBackupCopyHere(RegionId region);
  absl::Status PrepareHere(const LogRecord& record);
  void FreeCommitted(const std::vector<FatPtr>& freed);
  // Appends `record` (or its `encoded` form) as `type`; `done` once durable.
  void Log(storage::NodeLogType type, const LogRecord& record, absl::string_view encoded, TxDone done);
  // COMMIT-PRIMARY: applies once the decision is durable. A failed append is answered
  // and retried (the locks stay: nothing is readable that a crash could lose).
  void CommitPrimaryWhenDurable(uint64_t transaction, TxDone done);
  // A single-machine commit from its first send to its apply (single_machine_commit.cc).
  // Its entries are the participant's lock record (held until the apply or abort).
  struct Replication {
    enum class LocalLog { kPending, kDurable, kFailed };
    uint64_t sequence = 0;                     // ApplySequencer's
    uint64_t epoch = 0;                        // the commit record's
    absl::InlinedVector<RegionId, 4> regions;  // those it writes
    std::string payload;                       // its kTxApply request (EncodeApplyRequest)
    absl::InlinedVector<NodeId, 4> backups;    // every backup it goes to
    absl::InlinedVector<NodeId, 4> waiting;    // no answer yet, or one that may be lost: asked again
    absl::InlinedVector<NodeId, 4> refused;    // refused it (applied nothing) while none has it
    bool stands = false;  // a backup applied it (or may have, and left): the commit stands
    LocalLog local = LocalLog::kPending;       // this node's kTxApplied record
    bool local_maybe_durable = false;          // kFailed, but written (storage::MaybeDurable)
    absl::Status refusal;                      // the first refusal (a backup's or the log's)
    TxDone done;                               // the caller's; empty once answered
    TimerId answer_timer = 0;                  // answers "outcome unknown" if the backups are slow
    int retries = 0;
    absl::Status last_error;                   // a backup's, for the messages
  };
  // A backup's answer for a record in maybe_logged_.
  absl::Status MaybeLoggedHere(uint64_t transaction) const;
  // The kTxApplyMsgId header of this thread's record `sequence`, with the watermark now.
  ApplyRequest ApplyHeader(uint64_t sequence) const;
  void LogHere(uint64_t transaction);
  void SendApply(uint64_t transaction, NodeId backup);
  void OnApplied(uint64_t transaction, NodeId backup, const absl::Status& s);
  void RetryApply(uint64_t transaction, NodeId backup);
  // The commit stands (a backup applied it, or may have): those that refused it are
  // asked again.
  void Stand(uint64_t transaction);
  // What the answers so far allow: apply and unlock once every backup acknowledged and
  // this node logged the record; abort once every backup refused it (none applied it);
  // else wait (and retry what failed).
  void DecideReplication(uint64_t transaction);
  void FinishReplication(uint64_t transaction, bool commit);
  void AnswerUnknown(uint64_t transaction);
  // Sets the records of `departed` senders aside (RetainedCommits::Departed).
  void ForgetDeparted(const absl::flat_hash_set<NodeId>& departed);

  // Aborts `transaction` here: locks, kept records, recovery's locks and the
  // allocations only it held; logs the abort (unwaited) when it had anything here.
  void AbortHere(uint64_t transaction);
  // Drops the participants of a transaction that holds nothing here any more.
  void ForgetIfDone(uint64_t transaction);

  const NodeId self_;
  MsgThread* const thread_;
  const alloc::BackupRegions* const copies_;
  alloc::ThreadAllocator* const allocator_;
  std::unique_ptr<ObjectReader> reader_;
  std::unique_ptr<OneSidedAccess> one_sided_;  // uses allocator_'s epoch: destroyed before it
  const TxOptions options_;
  Participant participant_;
  BackupLog backup_log_;
  alloc::ThreadLog* const log_;
  TxObjectPool spare_objects_;
  const uint32_t boot_;
  uint64_t next_transaction_ = 1;
  std::vector<FatPtr> freed_;  // scratch for Participant::Commit
  // Single-machine commits being replicated, by transaction, and their numbering.
  absl::flat_hash_map<uint64_t, std::unique_ptr<Replication>> replicating_;
  ApplySequencer sequencer_;
  // Backup side: the single-machine commit records applied here, for failover.
  RetainedCommits retained_;
  // Backup records whose log write went through and whose sync failed: a restart may
  // replay them, so they are never refused (storage::MaybeDurable).
  absl::flat_hash_set<uint64_t> maybe_logged_;
  LogRecordView apply_scratch_;  // ApplyBackup's decoding, its capacity reused
  // Restored in-doubt transactions (RestoreInDoubt): the slots they allocated here,
  // freed if recovery aborts them (their coordinator, who would have, is gone).
  absl::flat_hash_map<uint64_t, std::vector<FatPtr>> restored_allocations_;
  // Distributed transactions prepared here: the nodes their PREPARE went to.
  absl::flat_hash_map<uint64_t, absl::InlinedVector<NodeId, 8>> participants_;
  // Failover: requests of earlier epochs are refused; the transactions recovery decides
  // (and, per transaction, its objects in promoted regions: RecoveryLocks holders).
  uint64_t fence_epoch_ = 0;
  struct RecoveryState {
    uint64_t epoch = 0;
    std::vector<NodeId> participants;
    std::vector<FatPtr> promoted;  // locked in RecoveryLocks
    std::vector<FatPtr> promoted_allocations;  // freed if aborted
  };
  absl::flat_hash_map<uint64_t, RecoveryState> recovering_;
  RecentCommits* recent_ = nullptr;
  RecoveryLocks* recovery_locks_ = nullptr;
  const membership::ServingGate* gate_ = nullptr;
  membership::PlacementCache placement_cache_;  // CheckNotArriving's
  std::shared_ptr<ThreadContext*> alive_;
  TxStats stats_;
  // KeepDelivering's. Last: its transactions go first, while what they use is here.
  absl::flat_hash_map<const void*, std::shared_ptr<void>> delivering_;
};

}  // namespace farm::tx

#endif  // FARM_TX_THREAD_CONTEXT_H_
