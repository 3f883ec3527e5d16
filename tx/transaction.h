// Transaction: one transaction's context (paper section 3.4, Figure 6's Tx): the
// objects it read with their versions, its buffered writes, allocations and frees; and
// its commit as coordinator (commit.cc).
//
// Reads go through the thread's lock-free reader and keep a private copy (TxObject, the
// paper's ObjBuf); writes modify that copy and mark it (Write), so nothing is visible
// before commit. Allocations take an object from the allocator at once (its allocated
// bit is set on its primary, but nobody else has its address) and free it again if the
// transaction does not commit; its contents and allocated bit reach the backups with
// the commit. Frees happen at commit.
//
// Commit, by where the objects are (the primaries of the regions, in the
// configuration the transaction started in):
//   - nothing written: done if at most one object was read, else VALIDATE;
//   - every object has one primary, this node: CommitSingleMachine here;
//   - every object has one primary, another node: the commit is shipped there
//     (kTxShipMsgId) and runs as a single-machine commit;
//   - otherwise two-phase commit: PREPARE (lock at primaries, log at backups), VALIDATE
//     the read set, then, if the configuration is unchanged, COMMIT to the backups and
//     then to the primaries. Any failure or missing reply before the commit decision
//     aborts at every participant, and the continuation runs only after they have
//     released their locks. The decision is taken when the first COMMIT-BACKUP is sent
//     (a backup may log it, and recovery commits what any replica logged): a backup or
//     primary that fails to confirm its COMMIT leaves the outcome unreported —
//     Unavailable, saying so — while the primaries still commit.
// Errors: Aborted (a conflict: locked or changed objects, or a configuration change),
// FailedPrecondition (an object freed meanwhile, or use after commit), Unavailable /
// DeadlineExceeded (a participant did not answer), and the reader's errors for reads.
//
// Threads: a transaction belongs to the thread whose ThreadContext created it; every
// call and continuation runs there. It holds the thread's epoch (alloc/epoch.h) from
// creation until it ends. Destroying it before commit aborts it.
#ifndef FARM_TX_TRANSACTION_H_
#define FARM_TX_TRANSACTION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "farm/base/address.h"
#include "farm/base/object_copy.h"
#include "farm/msg/call_all.h"
#include "membership/placement.h"
#include "tx/log_record.h"
#include "tx/thread_context.h"

namespace farm::tx {

// TxObject, a transaction's copy of one object: farm/base/object_copy.h.

class Transaction : public std::enable_shared_from_this<Transaction> {
 public:
  using ObjectDone = absl::AnyInvocable<void(absl::StatusOr<TxObject*>)>;
  enum class State { kActive, kCommitting, kCommitted, kAborted };

  static std::shared_ptr<Transaction> Create(ThreadContext* ctx);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // txRead: the object at `p` (size and incarnation from the pointer). A second read of
  // the same object returns the same copy (with the transaction's own writes), also
  // through the new name IncrementIncarnation gave it (incarnation + 1).
  void Read(FatPtr p, ObjectDone done);
  // txAlloc: a new object of `size` bytes, zero-filled, near `hint` (null: this node).
  void Alloc(uint32_t size, Addr hint, ObjectDone done);
  // txWrite: `object` (read or allocated in this transaction), as modified, is written
  // at commit.
  absl::Status Write(TxObject* object);
  // txFree: frees the object at commit (it need not have been read).
  absl::Status Free(FatPtr p);
  // One-sided objects (farm/api/one_sided.h; farm/base/object_layout.h), for the raw
  // facet's allocation and free only. AllocRaw: a one-sided object of `size` zero bytes
  // near `hint`, made one at commit (kAllocRaw: its allocated bit and raw header reach
  // the backups; no payload is logged); the TxObject it gives has no data and cannot be
  // written. FreeRaw: frees at commit a one-sided object that rawFree marked dying, or
  // that is lost (kFreeRaw; the primary refuses anything else).
  void AllocRaw(uint32_t size, Addr hint, ObjectDone done);
  absl::Status FreeRaw(FatPtr p);
  // objIncrementIncarnation: at commit the object's incarnation moves on, so pointers
  // with the old one fail (used to invalidate cached pointers); implies Write. Once per
  // transaction (TxObject::committed_ptr names the result); nothing for an object
  // allocated in it.
  absl::Status IncrementIncarnation(TxObject* object);
  // txCommit. `done` runs on this thread after the call returns, once.
  void Commit(TxDone done);
  // Ends an active transaction without committing: its allocations are freed.
  void Abort();
  // txWriteBytes: the bytes of log entries (headers and payloads) its commit would send
  // each replica of everything it writes, so far. O(objects).
  uint64_t WriteBytes() const;

  uint64_t id() const { return id_; }
  State state() const { return state_; }
  uint64_t epoch() const { return epoch_; }

 private:
  explicit Transaction(ThreadContext* ctx);
  absl::Status CheckActive() const;
  absl::Status CheckOwned(const TxObject* object) const;
  TxObject* Find(Addr a);
  TxObject* Insert(FatPtr p);
  void AllocImpl(uint32_t size, Addr hint, bool raw, ObjectDone done);
  absl::Status FreeImpl(FatPtr p, bool raw);

  // --- commit.cc ---
  struct Plan;
  absl::StatusOr<Plan> MakePlan(const membership::Placement& placement);
  // Fills plan.prepare and plan.validate from its entries.
  void AddNodeRecords(Plan& plan);
  void CommitReadOnly(Plan plan);
  void Ship(Plan plan, NodeId primary);
  void PrepareAll(std::shared_ptr<Plan> plan);
  void ValidateAll(std::shared_ptr<Plan> plan);
  // `backups_failed`: the COMMIT-BACKUP round's error, carried to the end (kCommitPrimary).
  void Decide(std::shared_ptr<Plan> plan, Decision decision, absl::Status backups_failed = absl::OkStatus());
  void AbortAll(std::shared_ptr<Plan> plan, absl::Status why);
  // The test seam at each step of a distributed commit (TxOptions::commit_step_hook).
  void Step(CommitStep step);
  // This node's part of a step: handles `record` and answers through its callback.
  using LocalStep = absl::FunctionRef<void(const LogRecord& record, TxDone done)>;
  // Sends each node its record as `id` (this node's own handled in place by `here`),
  // then continues with the first error once every node answered. With `participants`
  // the payloads are PREPAREs (EncodePrepare).
  void Exchange(MsgId id, const std::vector<NodeId>& nodes,
                const absl::flat_hash_map<NodeId, LogRecord>& records, LocalStep here, TxDone then,
                const std::vector<NodeId>* participants = nullptr);
  // Called when a node's first send of a decision failed (it is sent again).
  using NotYet = absl::AnyInvocable<void(NodeId node, const absl::Status& why)>;
  // Delivers `d` to every node of `nodes` (this one in place): `then` once each answered,
  // with the first error (DeliverDecision); `not_yet` for each whose first send failed.
  void ExchangeDecision(const std::vector<NodeId>& nodes, const TxDecision& d, NotYet not_yet, TxDone then);
  // Sends the decision to `node` until it answers — again after each send that was lost
  // or unanswered, with backoff — or leaves the configuration (Unavailable). A lost
  // COMMIT-PRIMARY or ABORT would leave locks held for good, a lost COMMIT-BACKUP a
  // backup without writes its primary applied.
  void DeliverDecision(NodeId node, Decision decision, std::shared_ptr<const std::string> payload, int attempt,
                       std::shared_ptr<NotYet> not_yet, TxDone done);
  // The caller hears "outcome unknown" if the decided commit's delivery takes longer
  // than rpc_timeout; the delivery goes on.
  void ReportUnknownAfterTimeout();
  // Finish, unless the caller heard already (the delivery of a decision goes on after
  // it: "outcome unknown", or an abort that did not reach every node at once); cancels
  // ReportUnknownAfterTimeout's report.
  void FinishOnce(const absl::Status& status, bool outcome_known);
  // Waits for this node's part and the remote ones: `then` with the first error.
  TxDone JoinLocalAndRemote(TxDone then, std::vector<NodeRequest>* requests, MsgId id);
  void Finish(const absl::Status& status, bool outcome_known = true);

  ThreadContext* const ctx_;
  const uint64_t id_;
  uint64_t epoch_ = 0;
  State state_ = State::kActive;
  std::vector<std::unique_ptr<TxObject>> objects_;
  absl::flat_hash_map<uint64_t, TxObject*> by_address_;
  TxDone done_;
  Context::TimerId report_timer_ = 0;  // ReportUnknownAfterTimeout's, while it is pending
  int delivering_ = 0;  // ExchangeDecision calls not done (the context keeps this meanwhile)
};

}  // namespace farm::tx

#endif  // FARM_TX_TRANSACTION_H_
