// UpdateExecutor: the primary's side of shipped updates, one per worker thread (paper
// section 4.3). Each update runs as a single-machine transaction on the machine that
// holds the key's shard (its buckets, overflow blocks and out-of-line values are
// collocated there).
//
// Flat combining: while a transaction for a key runs, further updates of that key that
// reach this thread queue behind it; when it ends, all queued ones run as ONE
// transaction (applied in arrival order, one write of the final state), and each gets
// its own result. Hot keys cost one commit per batch instead of one per update.
//
// Conflicts (Aborted, or a block freed under the transaction) are retried with a
// randomized backoff for up to kRetryFor; then the updates fail with Aborted.
//
// The table's layout comes in as a KeyOpsApplier: the executor is the same for every
// layout (kv/table_ops.h's HopscotchApplier, kv/linear/linear_ops.h's LinearApplier).
#ifndef FARM_KV_UPDATE_EXECUTOR_H_
#define FARM_KV_UPDATE_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "farm/api/coro.h"
#include "kv/key_ops.h"
#include "kv/messages.h"

namespace farm::kv {

struct UpdateExecutorStats {
  uint64_t updates = 0;
  uint64_t transactions = 0;  // committed batches
  uint64_t retries = 0;
};

// A layout's transaction code for a batch of updates of one key: applies `ops` to `key`
// in `tx`, as if one after another, and leaves `tx` ready to commit (the executor
// commits or aborts it). Each op's own errors are in its result; the returned error is
// the transaction's (Aborted, FailedPrecondition: retried), a corrupt table (Internal)
// or InvalidArgument. Called on one worker thread at a time; shared by the threads.
class KeyOpsApplier {
 public:
  virtual ~KeyOpsApplier() = default;
  virtual Task<absl::StatusOr<std::vector<KeyOpResult>>> Apply(Tx& tx, std::string key,
                                                               std::vector<KeyOp> ops) const = 0;
  // Called once per batch whose transaction committed, with the batch's ops and
  // results, on the executor's thread (e.g. to count pairs). Nothing by default.
  virtual void OnCommitted(Context& ctx, absl::string_view key, const std::vector<KeyOp>& ops,
                           const std::vector<KeyOpResult>& results) const {}
};

class UpdateExecutor {
 public:
  static constexpr absl::Duration kRetryFor = absl::Seconds(5);

  UpdateExecutor(Context& ctx, std::shared_ptr<const KeyOpsApplier> applier);
  UpdateExecutor(const UpdateExecutor&) = delete;
  UpdateExecutor& operator=(const UpdateExecutor&) = delete;

  // Runs `request` for `message` and replies to it (on this thread, later).
  void Submit(const UpdateRequest& request, const Message& message);

  const UpdateExecutorStats& stats() const { return stats_; }

 private:
  struct Waiting {
    KeyOp op;
    Message reply_to;  // payload cleared: only where the reply goes
  };
  struct KeyQueue {
    std::vector<Waiting> queued;
  };

  void RunBatch(const std::string& key);
  Task<absl::StatusOr<std::vector<KeyOpResult>>> Execute(std::string key, std::vector<KeyOp> ops);

  Context& ctx_;
  const std::shared_ptr<const KeyOpsApplier> applier_;
  // Keys with a transaction running; their queues of updates that arrived meanwhile.
  absl::flat_hash_map<std::string, std::unique_ptr<KeyQueue>> running_;
  absl::BitGen rng_;
  UpdateExecutorStats stats_;
};

}  // namespace farm::kv

#endif  // FARM_KV_UPDATE_EXECUTOR_H_
