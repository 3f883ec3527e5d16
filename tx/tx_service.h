// TxService: the transaction protocol on a node — one ThreadContext per messenger
// thread, and the handlers of tx_messages.h, registered before the messenger starts.
// A request is handled on the thread that receives it, by that thread's context.
// Malformed payloads are answered InvalidArgument.
//
// Recovery after a restart (recovery.h): the outcomes the node's log held answer other
// nodes' kTxOutcomeMsgId queries, and ResolveInDoubt settles the transactions the crash
// left in doubt here: it asks every participant of each (the nodes its PREPARE went to,
// logged with it) what its log said, commits each one that some replica logged a commit
// decision for, and aborts the rest. That
// is safe because a commit decision is logged (durable) at a replica before any primary
// applies it and before the coordinator reports it, and after a restart no coordinator
// of the old configuration can send another (its epoch is gone); so the set of
// replicas that logged a commit is fixed, and every node that asks gets the same
// answer — provided every participant's log is heard: one that does not answer (not
// restarted yet) is asked again until it does (a node that never comes back is
// failover's to handle). Single-machine commits have no in-doubt state: a restarted
// primary reconciles its regions' replicas with the records replay listed as retained
// (RestartRetained, CollectRetained, PushRetained; farm/node/restart_reconcile.cc).
//
// Failover (a configuration that lost members; FaRM, SOSP 2015, section 5.3, adapted):
// before the node uses the new configuration, each thread fences it
// (ThreadContext::FenceForFailover): requests of earlier epochs are refused from then on,
// and every transaction with records here whose coordinator or some participant left is
// recovering — its coordinator can no longer commit it here. Fenced(epoch) then says so
// node-wide. ResolveRecovering asks every surviving participant of each (kTxVoteMsgId;
// a participant answers only once it has fenced the same epoch) whether it committed
// it, commits those that one did, and aborts the rest. Why every thread that recovers a
// transaction reaches the same decision: a replica's "committed" answer can only come
// from a commit it took before it fenced (the coordinator's COMMIT-BACKUP or
// COMMIT-PRIMARY: the coordinator had decided commit), or from recovery's own commit,
// which needs such an answer first; after every survivor fenced, no new commit can
// come from the coordinator, so the set of survivors that committed is fixed and every
// asker sees it (RecentCommits keeps it long enough). A commit reported to an
// application was taken by every replica of every written region, so with r >= 2 some
// survivor answers committed and the transaction commits. The participants that left
// are not asked: their data is never used again (a node that left rejoins empty).
//
// Threads: Create on the node's start-up thread (before Messenger::Start); context(i)
// only on messenger thread i. Destroy each context on its thread (StopThread), before
// the messenger and the allocator service go.
#ifndef FARM_TX_TX_SERVICE_H_
#define FARM_TX_TX_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "alloc/alloc_service.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "tx/recovery.h"
#include "tx/thread_context.h"

namespace farm::tx {

// What the node brings from its log to a start.
struct TxRecovery {
  uint32_t boot = 0;  // this start's number (transaction ids)
  absl::flat_hash_map<TxKey, TxOutcome> outcomes;
  // ReplayResult::retained: single-machine commit records another replica may lack.
  std::vector<std::string> retained;
};

class TxService {
 public:
  static absl::StatusOr<std::unique_ptr<TxService>> Create(NodeId self, Messenger* messenger,
                                                           Fabric* fabric,
                                                           alloc::Allocator* allocator,
                                                           alloc::AllocService* alloc_service,
                                                           const TxOptions& options = {},
                                                           TxRecovery recovery = {});

  ThreadContext* context(size_t i) const { return contexts_[i].get(); }
  size_t thread_count() const { return contexts_.size(); }
  void StopThread(size_t i) { contexts_[i].reset(); }

  // On thread 0's loop, once the node's own regions are adopted: takes the in-doubt
  // transactions over (ThreadContext::RestoreInDoubt) and settles them as above;
  // `done` (on that loop) once every one is decided, or with the error that stopped it.
  void ResolveInDoubt(std::vector<InDoubt> in_doubt, absl::AnyInvocable<void(const absl::Status&)> done);

  // Failover: every thread has fenced `epoch` (ThreadContext::FenceForFailover), or the
  // configuration lost nobody; votes of that epoch are answered from now on. Any thread.
  void Fenced(uint64_t epoch);
  // On thread `thread`'s loop: decides the transactions that thread recovers (above).
  void ResolveRecovering(size_t thread);
  // Failover, at a new primary before its promoted `regions` serve (retained_commits.h),
  // from a thread that is not one of the node's workers (it blocks): the single-machine
  // commit records that the members `nodes` retain with an entry in `regions`, asked in
  // `epoch` (each answers once it has fenced it). Unavailable (ask again later) when one
  // did not answer in `timeout`.
  absl::StatusOr<std::vector<LogRecord>> CollectRetained(const std::vector<NodeId>& nodes, uint64_t epoch,
                                                         const std::vector<RegionId>& regions,
                                                         absl::Duration timeout);
  // Then, the same way: applies what the backup copies of `regions` here lack of
  // `records`, durably (ThreadContext::ApplyRetained); the number of entries applied.
  absl::StatusOr<size_t> ApplyRetained(const std::vector<LogRecord>& records, const std::vector<RegionId>& regions,
                                       absl::Duration timeout);
  // Restart (recovery.h, "retained"), before this node's own `regions` serve: the
  // records its log kept for reconciliation with an entry in them. Any thread.
  std::vector<LogRecord> RestartRetained(const std::vector<RegionId>& regions) const;
  // Then, from a thread that is not a worker (it blocks): has `node` apply what its
  // copies of `regions` lack of `records`, durably (kTxReconcileMsgId). Unavailable when
  // it did not answer in `timeout`.
  absl::Status PushRetained(NodeId node, const std::vector<LogRecord>& records, const std::vector<RegionId>& regions,
                            absl::Duration timeout);
  const RecoveryLocks& recovery_locks() const { return recovery_locks_; }
  const RecentCommits& recent_commits() const { return recent_commits_; }

 private:
  TxService() = default;
  absl::Status RegisterHandlers(Messenger* messenger);
  ThreadContext* ContextFor(MsgThread& thread, const Message& message);
  void AskOutcomes(std::shared_ptr<struct Resolution> resolution);
  void Settle(std::shared_ptr<struct Resolution> resolution);
  void AskVotes(std::shared_ptr<struct FailoverResolution> resolution);
  void SettleFailover(std::shared_ptr<struct FailoverResolution> resolution);
  TxOutcome OutcomeHere(const TxKey& key) const;
  // kTxRetainedMsgId, received on `thread`: every thread's retained records, one page.
  void AnswerRetained(MsgThread& thread, ReplyTo reply_to, RetainedQuery query);

  NodeId self_ = kInvalidNode;
  Messenger* messenger_ = nullptr;
  std::vector<std::unique_ptr<ThreadContext>> contexts_;
  absl::flat_hash_map<TxKey, TxOutcome> outcomes_;  // fixed after Create
  RecentCommits recent_commits_;
  RecoveryLocks recovery_locks_;
  std::atomic<uint64_t> fenced_epoch_{0};
  // TxRecovery::retained, decoded; fixed after Create. Answered to kTxRetainedMsgId
  // queries with the threads' retained records.
  struct RestartRecord {
    std::string encoding;
    LogRecord record;
  };
  std::vector<RestartRecord> restart_retained_;
};

}  // namespace farm::tx

#endif  // FARM_TX_TX_SERVICE_H_
