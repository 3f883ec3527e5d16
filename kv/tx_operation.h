// Helpers for the layouts' operations inside a FaRM transaction: RunTxOperation runs one
// (a Task) for a StoreTxn (kv/layout_txn.h) on `ctx`'s thread; Retryable maps an object
// freed under the transaction to the conflict it is; TxReadAll reads several objects at
// once.
#ifndef FARM_KV_TX_OPERATION_H_
#define FARM_KV_TX_OPERATION_H_

#include <coroutine>
#include <cstddef>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// co_await TxReadAll(tx, objects) -> absl::StatusOr<std::vector<ObjBuf*>>: txRead of
// every object, issued together (about one round trip, not one per object); the copies
// in the order given, or the first error met (every read has completed either way).
class [[nodiscard]] TxReadAll {
 public:
  TxReadAll(Tx& tx, std::vector<FatPtr> objects) : tx_(&tx), objects_(std::move(objects)) {}
  bool await_ready() const noexcept { return objects_.empty(); }
  void await_suspend(std::coroutine_handle<> h) {
    handle_ = h;
    copies_.resize(objects_.size());
    pending_ = objects_.size();
    // txRead's continuations run later, never inside the call: every read is issued
    // before the first of them can resume the coroutine.
    for (size_t i = 0; i < objects_.size(); ++i) {
      txRead(*tx_, objects_[i], [this, i](absl::StatusOr<ObjBuf*> r) {
        if (r.ok()) {
          copies_[i] = *r;
        } else if (error_.ok()) {
          error_ = r.status();
        }
        if (--pending_ == 0) handle_.resume();
      });
    }
  }
  absl::StatusOr<std::vector<ObjBuf*>> await_resume() {
    if (!error_.ok()) return error_;
    return std::move(copies_);
  }

 private:
  Tx* tx_;
  std::vector<FatPtr> objects_;
  std::vector<ObjBuf*> copies_;
  absl::Status error_;
  size_t pending_ = 0;
  std::coroutine_handle<> handle_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TX_OPERATION_H_
