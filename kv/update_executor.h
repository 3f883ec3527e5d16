// UpdateExecutor: the primary's side of shipped updates, one per worker thread and table
// (paper section 4.3). Updates run as single-machine transactions on the machine that
// holds the keys' shards (their buckets, overflow blocks and out-of-line values are
// collocated there); every update reaching an executor is for a key of its table whose
// primary is this machine (the sender routed it by the key's shard).
//
// Flat combining across keys: while a batch transaction runs, updates that reach this
// thread wait (kv/update_queue.h); when it ends, the next pass takes the waiting updates
// of up to max_batch_keys keys and runs them as ONE transaction — one commit record,
// one replication round trip — each key's updates applied in arrival order with its
// final state written once, each update answered with its own result. A key is in one
// running batch at most, and its updates keep their arrival order (UpdateQueue's
// invariants). A batch stops taking keys at max_write_bytes of commit records
// (kv/key_batch.h); the keys left run in the batch's next transaction.
//
// Failures, per batch:
//   - a conflict (Aborted, or a block freed under the transaction: FailedPrecondition)
//     retries the batch. When another batch of this executor is in a transaction
//     attempt, the retry waits for an attempt to commit (or for the last one in flight
//     to end): the batches of one thread share the primary's hot objects (a probe run,
//     a neighbourhood), so the conflict is most likely with that attempt, and a blind
//     retry would meet its locks again. Each such end resumes one waiting batch, first
//     come first served. With no other attempt in flight, the retry comes after a
//     randomized backoff. After conflicts_before_split
//     conflicts in a row a batch of several keys splits in two halves, each running
//     and retrying (and splitting) on its own, so one hot conflicting key ends up alone
//     and cannot starve the rest. A batch that split, or a single key that kept
//     conflicting as long, no longer counts as a pass in flight: the next pass may
//     start (its keys stay busy). Only a single key gives up: it retries for up to
//     retry_for, then its updates fail with Aborted;
//   - another error from the layout's code (InvalidArgument for a key over the limit,
//     ResourceExhausted, Internal), or a commit refused before anything was sent
//     (InvalidArgument: the record over a message), committed nothing: a batch of
//     several keys splits in halves at once, so the error reaches only the key it
//     belongs to; a single key's updates all get it;
//   - any other commit error (Unavailable, DeadlineExceeded: the outcome may be
//     unknown) is the answer of every update in that transaction; nothing of it is run
//     again. Keys the transaction did not take (past the write budget) were not in it:
//     they run in the batch's next transaction.
// An op's own error (INCR of a non-number, a value over the limit) is in its result and
// does not fail the batch.
//
// The table's layout comes in as a KeyOpsApplier: the executor is the same for every
// layout that ships updates (kv/table_ops.h's HopscotchApplier, linear_ops.h's
// LinearApplier, chained_ops.h's ChainedApplier; cuckoo updates are client-driven).
//
// Threads: every call on the executor's thread; its tasks run there too.
#ifndef FARM_KV_UPDATE_EXECUTOR_H_
#define FARM_KV_UPDATE_EXECUTOR_H_

#include <coroutine>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/key_batch.h"
#include "kv/key_ops.h"
#include "kv/messages.h"
#include "kv/update_queue.h"

namespace farm::kv {

struct UpdateExecutorStats {
  uint64_t updates = 0;
  uint64_t transactions = 0;  // committed batch transactions
  uint64_t keys = 0;          // keys those transactions carried (keys / transactions: the combining)
  uint64_t retries = 0;       // batch transactions run again after a conflict
  uint64_t waits = 0;         // of those, run once another batch's attempt committed
  uint64_t splits = 0;        // batches split in two (conflicts or a key's error)
};

// A layout's transaction code for a batch of keys: applies each key's ops to it in `tx`,
// in order, as if one after another (KeyUpdates::results set for each key applied), and
// leaves `tx` ready to commit (the executor commits or aborts it). Keys are distinct.
// Before each key after the first it stops when WriteBudget(max_write_bytes) says the key
// does not fit (kv/key_batch.h; ApplyKeysInOrder is that loop). Returns how many keys it
// applied (a prefix, at least one), or the transaction's error: Aborted,
// FailedPrecondition (retried), a corrupt table (Internal), InvalidArgument,
// ResourceExhausted. Called on one worker thread at a time; shared by the threads.
class KeyOpsApplier {
 public:
  virtual ~KeyOpsApplier() = default;
  virtual Task<absl::StatusOr<size_t>> Apply(Tx& tx, absl::Span<KeyUpdates> keys,
                                             uint64_t max_write_bytes) const = 0;
  // Called per key of a committed transaction, with its ops and results, on the
  // executor's thread (e.g. to count pairs). Nothing by default.
  virtual void OnCommitted(Context& ctx, absl::string_view key, absl::Span<const KeyOp> ops,
                           absl::Span<const KeyOpResult> results) const {}
};

// Where an update's outcome goes: by default msgReply to the update's message; tests
// record outcomes instead. Called on the executor's thread, once per update.
class UpdateReplier {
 public:
  virtual ~UpdateReplier() = default;
  virtual void Reply(Context& ctx, const Message& to, const KeyOpResult& result) const = 0;
  virtual void ReplyError(Context& ctx, const Message& to, const absl::Status& error) const = 0;
};

struct UpdateExecutorOptions {
  size_t max_batch_keys = 64;                  // keys per batch (its first transaction)
  uint64_t max_write_bytes = kBatchWriteBytes;  // per transaction (kv/key_batch.h)
  int conflicts_before_split = 2;
  size_t max_passes = 1;  // batches of waiting updates in flight at once (split ones aside)
  // How long a single key's updates retry through conflicts before they fail with
  // Aborted, from its batch's last commit or split (a batch of several keys splits
  // instead).
  absl::Duration retry_for = absl::Seconds(5);
  // Tests only: commits a batch's transaction in place of TxCommit (e.g. commits it,
  // then reports an unknown outcome). Empty: TxCommit.
  std::function<Task<absl::Status>(Tx&)> commit_for_test;
};

class UpdateExecutor {
 public:
  // `replier`: nullptr for msgReply.
  UpdateExecutor(Context& ctx, std::shared_ptr<const KeyOpsApplier> applier,
                 UpdateExecutorOptions options = {}, std::shared_ptr<const UpdateReplier> replier = nullptr);
  UpdateExecutor(const UpdateExecutor&) = delete;
  UpdateExecutor& operator=(const UpdateExecutor&) = delete;

  // Queues `request` (copied) and answers `message` later, on this thread.
  void Submit(const UpdateRequest& request, const Message& message);

  const UpdateExecutorStats& stats() const { return stats_; }
  // Updates waiting for a pass, and batches running (split ones included).
  size_t waiting() const { return queue_.size(); }
  size_t running() const { return running_; }

 private:
  struct Running {
    UpdateBatch batch;
    bool pass = false;  // counts towards max_passes
  };

  // Starts a pass if fewer than max_passes run and some waiting update's key is free.
  void MaybeStartPass();
  Task<void> Run(Running* run);
  // Commits' bookkeeping and answers for the first `n` remaining keys of `run`.
  void Committed(Running& run, size_t n);
  // `error` answers every update of the first `n` remaining keys of `run`.
  void Fail(Running& run, size_t n, const absl::Status& error);
  // Moves the second half of `run`'s remaining keys into a batch of their own and runs it.
  void Split(Running& run);
  // `run` no longer counts as a pass.
  void Demote(Running& run);
  Running* Acquire();
  void Finish(Running* run);
  // A batch's transaction attempt ended: resumes the first waiting batch if it
  // committed or was the last attempt in flight. Invariant: while batches wait, an
  // attempt is in flight or a resumed batch (posted) is about to start one.
  void EndAttempt(bool committed);
  // co_await NextAttemptEnd{this}: a conflicting batch waits for EndAttempt to resume
  // it. Only while attempting_ > 0, which keeps the invariant.
  struct NextAttemptEnd {
    UpdateExecutor* executor;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) { executor->after_attempt_.push_back(h); }
    void await_resume() const noexcept {}
  };

  Context& ctx_;
  const std::shared_ptr<const KeyOpsApplier> applier_;
  const UpdateExecutorOptions options_;
  const std::shared_ptr<const UpdateReplier> replier_;
  UpdateQueue queue_;
  std::vector<std::unique_ptr<Running>> batches_;  // every batch made, running or spare
  std::vector<Running*> spare_;                    // finished ones, kept for their capacity
  size_t passes_ = 0;   // running batches with pass set
  size_t running_ = 0;  // all running batches
  size_t attempting_ = 0;  // running batches inside a transaction attempt
  std::deque<std::coroutine_handle<>> after_attempt_;  // conflicting batches waiting for an attempt's end
  absl::BitGen rng_;
  UpdateExecutorStats stats_;
};

}  // namespace farm::kv

#endif  // FARM_KV_UPDATE_EXECUTOR_H_
