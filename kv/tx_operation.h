// RunTxOperation: runs one of a layout's transaction operations (a Task) for a StoreTxn
// (kv/table_txn.h, kv/linear/linear_txn.h) on `ctx`'s thread; `done` always runs later,
// never inside the call (a task may finish before its first suspension).
#ifndef FARM_KV_TX_OPERATION_H_
#define FARM_KV_TX_OPERATION_H_

#include <utility>

#include "farm/api/coro.h"
#include "farm/api/farm.h"

namespace farm::kv {

template <typename T, typename D>
void RunTxOperation(Context& ctx, Task<T> task, D done) {
  Context* c = &ctx;
  Spawn(std::move(task), [c, done = std::move(done)](T r) mutable {
    c->Defer([r = std::move(r), done = std::move(done)]() mutable { done(std::move(r)); });
  });
}

}  // namespace farm::kv

#endif  // FARM_KV_TX_OPERATION_H_
