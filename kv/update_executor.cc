#include "kv/update_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace farm::kv {
namespace {

class MessageReplier final : public UpdateReplier {
 public:
  void Reply(Context& ctx, const Message& to, const KeyOpResult& result) const override {
    (void)msgReply(ctx, to, EncodeUpdateReply(result));
  }
  void ReplyError(Context& ctx, const Message& to, const absl::Status& error) const override {
    (void)msgReplyError(ctx, to, error);
  }
};

bool IsConflict(const absl::Status& s) {
  return s.code() == absl::StatusCode::kAborted || s.code() == absl::StatusCode::kFailedPrecondition;
}

}  // namespace

UpdateExecutor::UpdateExecutor(Context& ctx, std::shared_ptr<const KeyOpsApplier> applier,
                               UpdateExecutorOptions options, std::shared_ptr<const UpdateReplier> replier)
    : ctx_(ctx),
      applier_(std::move(applier)),
      options_(options),
      replier_(replier != nullptr ? std::move(replier) : std::make_shared<const MessageReplier>()) {}

void UpdateExecutor::Submit(const UpdateRequest& request, const Message& message) {
  ++stats_.updates;
  queue_.Push(request, message);
  MaybeStartPass();
}

UpdateExecutor::Running* UpdateExecutor::Acquire() {
  if (spare_.empty()) {
    batches_.push_back(std::make_unique<Running>());
    spare_.push_back(batches_.back().get());
  }
  Running* run = spare_.back();
  spare_.pop_back();
  ++running_;
  return run;
}

void UpdateExecutor::MaybeStartPass() {
  while (passes_ < options_.max_passes && queue_.size() > 0) {
    Running* run = Acquire();
    queue_.TakeBatch(options_.max_batch_keys, run->batch);
    if (run->batch.empty()) {  // every waiting update's key is in a running batch
      --running_;
      spare_.push_back(run);
      return;
    }
    run->pass = true;
    ++passes_;
    Spawn(Run(run));
  }
}

void UpdateExecutor::Demote(Running& run) {
  if (!run.pass) return;
  run.pass = false;
  --passes_;
  MaybeStartPass();
}

void UpdateExecutor::Finish(Running* run) {
  --running_;
  if (run->pass) {
    run->pass = false;
    --passes_;
  }
  spare_.push_back(run);
  MaybeStartPass();  // this batch's keys are free: their waiting updates may go now
}

void UpdateExecutor::EndAttempt(bool committed) {
  --attempting_;
  // A failed attempt frees nothing the waiting batches wait for (the attempt that beat
  // them still runs), unless it was the last one.
  if (after_attempt_.empty() || (!committed && attempting_ > 0)) return;
  std::coroutine_handle<> next = after_attempt_.front();
  after_attempt_.pop_front();
  ctx_.Post([next] { next.resume(); });
}

void UpdateExecutor::Committed(Running& run, size_t n) {
  ++stats_.transactions;
  stats_.keys += n;
  absl::Span<KeyUpdates> keys = run.batch.remaining();
  for (size_t k = 0; k < n; ++k) {
    const KeyUpdates& u = keys[k];
    applier_->OnCommitted(ctx_, u.key, u.ops, u.results);
    absl::Span<const Message> to = run.batch.reply_to(k);
    for (size_t i = 0; i < to.size(); ++i) replier_->Reply(ctx_, to[i], u.results[i]);
    queue_.Release(u.key);
  }
  run.batch.Consume(n);
}

void UpdateExecutor::Fail(Running& run, size_t n, const absl::Status& error) {
  absl::Span<KeyUpdates> keys = run.batch.remaining();
  for (size_t k = 0; k < n; ++k) {
    for (const Message& to : run.batch.reply_to(k)) replier_->ReplyError(ctx_, to, error);
    queue_.Release(keys[k].key);
  }
  run.batch.Consume(n);
}

void UpdateExecutor::Split(Running& run) {
  ++stats_.splits;
  Running* half = Acquire();
  run.batch.MoveTailTo(run.batch.remaining_keys() / 2, half->batch);
  half->pass = false;
  Spawn(Run(half));
  Demote(run);
}

Task<void> UpdateExecutor::Run(Running* run) {
  absl::Time give_up = absl::Now() + options_.retry_for;
  absl::Duration backoff = absl::Microseconds(5);
  int conflicts = 0;
  while (!run->batch.empty()) {
    absl::Span<KeyUpdates> keys = run->batch.remaining();
    TxHandle tx = txCreate(ctx_);
    ++attempting_;
    absl::StatusOr<size_t> applied = co_await applier_->Apply(*tx, keys, options_.max_write_bytes);
    absl::Status status = applied.status();
    // Whether the transaction certainly committed nothing: so its updates may run again.
    bool nothing_committed = true;
    if (status.ok()) {
      // (Not a conditional expression with co_await in its arms: GCC 12 miscompiles
      // the temporaries of that.)
      if (options_.commit_for_test) {
        status = co_await options_.commit_for_test(*tx);
      } else {
        status = co_await TxCommit(*tx);
      }
      if (!status.ok()) nothing_committed = IsConflict(status) || status.code() == absl::StatusCode::kInvalidArgument;
    } else {
      txAbort(*tx);
    }
    tx.reset();
    EndAttempt(status.ok());
    if (status.ok()) {
      Committed(*run, *applied);
      give_up = absl::Now() + options_.retry_for;
      backoff = absl::Microseconds(5);
      conflicts = 0;
      continue;
    }
    const bool conflict = IsConflict(status);
    if (conflict) ++conflicts;
    const bool keeps_conflicting = conflicts >= options_.conflicts_before_split;
    if (keys.size() > 1 && nothing_committed && (!conflict || keeps_conflicting)) {
      Split(*run);
      conflicts = 0;
      give_up = absl::Now() + options_.retry_for;  // as the other half's
      continue;
    }
    if (!conflict) {
      if (!nothing_committed && *applied < keys.size()) {
        // The outcome of the keys it took is unknown; the others were not in it.
        Fail(*run, *applied, status);
        continue;
      }
      Fail(*run, keys.size(), status);
      break;
    }
    // A single key that keeps conflicting: the next pass need not wait for it.
    if (keeps_conflicting) Demote(*run);
    // Several keys split before they give up (a first conflict after a long attempt —
    // reads of objects recovery holds, a wait for other attempts — must not fail them).
    if (keys.size() == 1 && absl::Now() >= give_up) {
      Fail(*run, keys.size(), absl::AbortedError(absl::StrCat("gave up after conflicts: ", status.message())));
      break;
    }
    ++stats_.retries;
    if (attempting_ > 0) {
      ++stats_.waits;
      co_await NextAttemptEnd{this};
    } else {
      co_await SleepFor(ctx_, absl::Nanoseconds(absl::Uniform<int64_t>(rng_, 0, absl::ToInt64Nanoseconds(backoff) + 1)));
      backoff = std::min(backoff * 2, absl::Milliseconds(1));
    }
  }
  Finish(run);
}

}  // namespace farm::kv
