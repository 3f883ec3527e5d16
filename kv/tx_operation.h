// Helpers for the layouts' operations inside a FaRM transaction: RunTxOperation runs one
// (a Task) for a StoreTxn (kv/layout_txn.h) on `ctx`'s thread; Retryable maps an object
// freed under the transaction to the conflict it is.
#ifndef FARM_KV_TX_OPERATION_H_
#define FARM_KV_TX_OPERATION_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"

namespace farm::kv {

// `done` always runs later, never inside the call (a task may finish before its first
// suspension).
template <typename T, typename D>
void RunTxOperation(Context& ctx, Task<T> task, D done) {
  Context* c = &ctx;
  Spawn(std::move(task), [c, done = std::move(done)](T r) mutable {
    c->Defer([r = std::move(r), done = std::move(done)]() mutable { done(std::move(r)); });
  });
}

// A READ in a transaction of an object freed or reallocated under it (FailedPrecondition:
// the table changed meanwhile) is a conflict: Aborted, which the caller retries. Other
// errors are returned as they are.
inline absl::Status Retryable(absl::Status s) {
  if (s.code() == absl::StatusCode::kFailedPrecondition) {
    return absl::AbortedError(absl::StrCat("the table changed meanwhile: ", s.message()));
  }
  return s;
}

}  // namespace farm::kv

#endif  // FARM_KV_TX_OPERATION_H_
