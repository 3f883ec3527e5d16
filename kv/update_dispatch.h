// UpdateDispatch: a table's handler for shipped updates (kKvUpdateMsgId or the table's
// TableIdentity::update_msg) on one machine, for any layout: it decodes each update and
// runs it in the receiving thread's UpdateExecutor (flat combining across keys,
// single-machine transactions where the layout keeps a key's objects together). A thread's first
// update opens the table there first (it is open on the sender, so every member has
// published its shards), through the layout's `open`, which yields its applier.
//
// Threads: OnUpdate on the worker thread that received the message; each thread's
// executor is touched by that thread only. stats() with the node stopped or quiescent.
#ifndef FARM_KV_UPDATE_DISPATCH_H_
#define FARM_KV_UPDATE_DISPATCH_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "kv/store.h"
#include "kv/update_executor.h"

namespace farm::kv {

class UpdateDispatch {
 public:
  // Opens the table on the calling thread and continues there with its applier.
  using OpenApplier =
      std::function<void(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const KeyOpsApplier>>> done)>;

  UpdateDispatch(size_t threads, OpenApplier open) : open_(std::move(open)), executors_(threads) {}
  UpdateDispatch(const UpdateDispatch&) = delete;
  UpdateDispatch& operator=(const UpdateDispatch&) = delete;

  void OnUpdate(Context& ctx, const Message& message);
  // Sum over this machine's executors.
  UpdateExecutorStats stats() const;

 private:
  UpdateExecutor& ExecutorOf(Context& ctx, std::shared_ptr<const KeyOpsApplier> applier);

  const OpenApplier open_;
  std::vector<std::unique_ptr<UpdateExecutor>> executors_;  // index = the thread's
};

}  // namespace farm::kv

#endif  // FARM_KV_UPDATE_DISPATCH_H_
