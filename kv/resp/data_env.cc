#include "kv/resp/data_env.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {

void RunAtomically(const DataEnv& env, const std::shared_ptr<KeyOps>& ops, bool needs_txn,
                   CommandBody body, ReplyDone done) {
  auto finish = [done = std::move(done)](CommandResult r) mutable {
    done(r.ok() ? std::move(*r) : StoreErrorReply(r.status()));
  };
  if (ops->transactional() || !needs_txn) {
    body(ops, std::move(finish));
    return;
  }
  const int attempts = env.max_txn_attempts;
  RunInTxn(
      env.store, nullptr, attempts,
      [body = std::move(body)](std::shared_ptr<TxnOps> txn, Done<CommandResult> d) {
        body(std::move(txn), std::move(d));
      },
      [finish = std::move(finish), attempts](CommandResult r) mutable {
        if (absl::IsAborted(r.status())) {
          r = absl::AbortedError(absl::StrCat("the store aborted this command's transaction ",
                                              attempts, " times (conflicts); nothing was written"));
        }
        finish(std::move(r));
      });
}

}  // namespace farm::kv::resp
