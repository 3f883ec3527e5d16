#include "kv/update_dispatch.h"

#include <string>
#include <utility>

#include "kv/messages.h"

namespace farm::kv {

UpdateExecutor& UpdateDispatch::ExecutorOf(Context& ctx, std::shared_ptr<const KeyOpsApplier> applier) {
  std::unique_ptr<UpdateExecutor>& e = executors_[ctx.thread_index()];
  if (e == nullptr) e = std::make_unique<UpdateExecutor>(ctx, std::move(applier));
  return *e;
}

void UpdateDispatch::OnUpdate(Context& ctx, const Message& message) {
  absl::StatusOr<UpdateRequest> request = DecodeUpdateRequest(message.payload);
  if (!request.ok()) {
    (void)msgReplyError(ctx, message, request.status());
    return;
  }
  if (executors_[ctx.thread_index()] != nullptr) {
    return executors_[ctx.thread_index()]->Submit(*request, message);
  }
  // The first update on this thread: open the table, then run it. The request is
  // copied: the payload is not valid after this handler returns.
  struct Copy {
    std::string key, value;
    UpdateRequest request;
    Message reply_to;
  };
  auto copy = std::make_shared<Copy>();
  copy->key = std::string(request->key);
  copy->value = std::string(request->value);
  copy->request = *request;
  copy->request.key = copy->key;
  copy->request.value = copy->value;
  copy->reply_to = message;
  copy->reply_to.payload = {};
  open_(ctx, [this, &ctx, copy](absl::StatusOr<std::shared_ptr<const KeyOpsApplier>> applier) {
    if (!applier.ok()) {
      (void)msgReplyError(ctx, copy->reply_to, applier.status());
      return;
    }
    ExecutorOf(ctx, *applier).Submit(copy->request, copy->reply_to);
  });
}

UpdateExecutorStats UpdateDispatch::stats() const {
  UpdateExecutorStats sum;
  for (const auto& e : executors_) {
    if (e == nullptr) continue;
    sum.updates += e->stats().updates;
    sum.transactions += e->stats().transactions;
    sum.keys += e->stats().keys;
    sum.retries += e->stats().retries;
    sum.splits += e->stats().splits;
    sum.waits += e->stats().waits;
  }
  return sum;
}

}  // namespace farm::kv
