#include "kv/resp/data_env.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {

namespace {

// The reply to a command's own transaction: Aborted means its attempts ran out.
Done<CommandResult> FinishTxn(int attempts, ReplyDone done) {
  return [attempts, done = std::move(done)](CommandResult r) mutable {
    if (absl::IsAborted(r.status())) {
      r = absl::AbortedError(absl::StrCat("the store aborted this command's transaction ", attempts,
                                          " times (conflicts); nothing was written"));
    }
    done(r.ok() ? std::move(*r) : StoreErrorReply(r.status()));
  };
}

}  // namespace

void RunAtomically(const DataEnv& env, const std::shared_ptr<KeyOps>& ops, bool needs_txn,
                   CommandBody body, ReplyDone done) {
  if (ops->transactional() || !needs_txn) {
    body(ops, [done = std::move(done)](CommandResult r) mutable {
      done(r.ok() ? std::move(*r) : StoreErrorReply(r.status()));
    });
    return;
  }
  RunInTxn(
      env.store, nullptr, env.max_txn_attempts,
      [body = std::move(body)](std::shared_ptr<TxnOps> txn, Done<CommandResult> d) {
        body(std::move(txn), std::move(d));
      },
      FinishTxn(env.max_txn_attempts, std::move(done)));
}

void RunAtomicallyOnKey(const DataEnv& env, const std::shared_ptr<KeyOps>& ops,
                        absl::string_view key, CommandBody body, ReplyDone done) {
  if (ops->transactional() || env.combiner == nullptr) {
    return RunAtomically(env, ops, /*needs_txn=*/true, std::move(body), std::move(done));
  }
  env.combiner->Update(key, std::move(body), FinishTxn(env.max_txn_attempts, std::move(done)));
}

void PutOnKey(const DataEnv& env, const std::shared_ptr<KeyOps>& ops, absl::string_view key,
              absl::string_view value, Done<absl::Status> done) {
  if (ops->transactional() || env.combiner == nullptr) return ops->Put(key, value, std::move(done));
  env.combiner->Put(key, value, std::move(done));
}

}  // namespace farm::kv::resp
