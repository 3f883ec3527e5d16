// RespSession: MULTI, EXEC, DISCARD, WATCH (see resp_session.h, "Transactions").
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kv/resp/async_steps.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/resp_session.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {

void RespSession::Queue(const CommandSpec& spec) {
  if (options_.counters != nullptr) RespCounters::Add(options_.counters->commands);
  // After an error EXEC can only abort: keep nothing more.
  if (multi_failed_) return ReplyNow(SimpleStringReply("QUEUED"));
  std::shared_ptr<Call> call = TakeCall(&spec);
  queued_bytes_ += call->bytes();
  if (queued_bytes_ > options_.max_queued_bytes) {
    multi_failed_ = true;
    queued_.clear();
    queued_bytes_ = 0;
    return ReplyNow(ErrorReply(absl::StrCat("ERR the MULTI queue is over its limit of ",
                                            options_.max_queued_bytes,
                                            " bytes; EXEC will discard the transaction")));
  }
  queued_.push_back(std::move(call));
  ReplyNow(SimpleStringReply("QUEUED"));
}

void RespSession::ResetMulti() {
  in_multi_ = false;
  multi_failed_ = false;
  queued_.clear();
  queued_bytes_ = 0;
}

void RespSession::Unwatch() {
  watch_txn_.reset();
  watch_doomed_.reset();
}

void RespSession::StartExec(const CommandSpec& spec) {
  if (!in_multi_) return ReplyNow(ErrorReply("ERR EXEC without MULTI"));
  if (multi_failed_) {
    ResetMulti();
    Unwatch();
    return ReplyNow(ErrorReply("EXECABORT Transaction discarded because of previous errors."));
  }
  auto calls = std::make_shared<std::vector<std::shared_ptr<Call>>>(std::move(queued_));
  ResetMulti();
  const bool doomed = watch_doomed_ != nullptr && *watch_doomed_;
  std::shared_ptr<StoreTxn> txn = std::exchange(watch_txn_, nullptr);  // EXEC unwatches
  watch_doomed_.reset();
  // A watched key that could not be read counts as changed: Redis's null array, and
  // nothing of the queue runs. Behind the commands before it, as every reply.
  if (doomed) {
    return StartAsync(spec, Access::kExclusive, /*exclusive=*/true,
                      [](std::shared_ptr<Call>, ReplyDone done) { done("*-1\r\n"); });
  }
  const bool watched = txn != nullptr;
  const int attempts = watched ? 1 : options_.max_txn_attempts;
  const std::weak_ptr<RespSession> weak = weak_from_this();

  TxnBody body = [weak, calls](std::shared_ptr<TxnOps> ops, Done<absl::StatusOr<std::string>> d) {
    struct State {
      std::string replies;
      bool cancelled = false;
      Done<absl::StatusOr<std::string>> done;
    };
    auto state = std::make_shared<State>();
    state->done = std::move(d);
    RespWriter(&state->replies).ArrayHeader(calls->size());
    RunSequentially(
        calls->size(),
        [weak, calls, ops, state](size_t i, absl::AnyInvocable<void()> next) {
          std::shared_ptr<RespSession> self = weak.lock();
          if (self == nullptr) state->cancelled = true;
          // A store error dooms the transaction (RunInTxn commits nothing after it): the
          // rest need not run.
          if (state->cancelled || !ops->failure().ok()) return next();
          // A command's own error is its reply; the transaction goes on (as in Redis).
          self->RunQueued((*calls)[i], ops,
                          [state, next = std::move(next)](std::string reply) mutable {
                            state->replies.append(reply);
                            next();
                          });
        },
        [state] {
          if (state->cancelled) {
            return state->done(absl::CancelledError("the connection closed during EXEC"));
          }
          state->done(std::move(state->replies));
        });
  };
  StartAsync(spec, Access::kExclusive, /*exclusive=*/true,
             [this, txn, watched, attempts, body = std::move(body)](std::shared_ptr<Call>,
                                                                    ReplyDone done) mutable {
               RunInTxn(store_, std::move(txn), attempts, std::move(body),
                        [watched, attempts,
                         done = std::move(done)](absl::StatusOr<std::string> r) mutable {
                          if (r.ok()) return done(std::move(*r));
                          if (absl::IsAborted(r.status())) {
                            // A WATCHed key changed: Redis's null array. Without WATCH
                            // the retries ran out.
                            if (watched) return done("*-1\r\n");
                            return done(ErrorReply(
                                absl::StrCat("ERR the store aborted the transaction ", attempts,
                                             " times (conflicts); nothing was written")));
                          }
                          done(StoreErrorReply(r.status()));
                        });
             });
}

void RespSession::StartWatch(const CommandSpec& spec) {
  if (in_multi_) return ReplyNow(ErrorReply("ERR WATCH inside MULTI is not allowed"));
  if (watch_txn_ == nullptr) {
    watch_txn_ = std::shared_ptr<StoreTxn>(store_->BeginTxn());
    watch_doomed_ = std::make_shared<bool>(false);
  }
  std::shared_ptr<StoreTxn> txn = watch_txn_;
  std::shared_ptr<bool> doomed = watch_doomed_;
  const StoreLimits limits = data_env_.limits;
  StartAsync(spec, Access::kExclusive, /*exclusive=*/true,
             [txn, doomed, limits](std::shared_ptr<Call> call, ReplyDone done) {
               struct State {
                 absl::Status status;
                 ReplyDone done;
               };
               auto state = std::make_shared<State>();
               state->done = std::move(done);
               RunSequentially(
                   call->argc - 1,
                   [call, txn, limits, state](size_t i, absl::AnyInvocable<void()> next) {
                     const std::string& key = call->args()[i + 1];
                     // A key over the limit cannot exist or be written: nothing to watch.
                     if (!state->status.ok() || OverKeyLimit(key, limits)) return next();
                     // Reading the key in the transaction records its version: a later
                     // change makes Commit fail.
                     txn->Get(key, [call, txn, state,
                                    next = std::move(next)](absl::StatusOr<Value> v) mutable {
                       if (!v.ok()) state->status = v.status();
                       next();
                     });
                   },
                   [state, doomed] {
                     // Redis never fails a WATCH: a key that could not be read dooms
                     // the transaction instead (EXEC answers nil).
                     if (!state->status.ok()) *doomed = true;
                     state->done(SimpleStringReply("OK"));
                   });
             });
}

void RespSession::RunQueued(const std::shared_ptr<Call>& call, const std::shared_ptr<KeyOps>& ops,
                            ReplyDone done) {
  const CommandSpec& spec = *call->spec;
  if (IsDataCommand(spec.id)) return RunDataCommand(data_env_, call, ops, std::move(done));
  switch (spec.id) {
    case CommandId::kDbSize:
      return RunDbSize(store_, std::move(done));
    case CommandId::kInfo:
      return RunInfo(store_, info_env_, call->args(), std::move(done));
    case CommandId::kUnwatch:  // EXEC has unwatched already
      return done(SimpleStringReply("OK"));
    default:
      return RunLocal(spec, call->args(), std::move(done));
  }
}

}  // namespace farm::kv::resp
