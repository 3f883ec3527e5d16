#include "kv/update_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace farm::kv {

UpdateExecutor::UpdateExecutor(Context& ctx, std::shared_ptr<const KeyOpsApplier> applier)
    : ctx_(ctx), applier_(std::move(applier)) {}

void UpdateExecutor::Submit(const UpdateRequest& request, const Message& message) {
  ++stats_.updates;
  Waiting w;
  w.op.kind = request.kind;
  w.op.value.assign(request.value.data(), request.value.size());
  w.op.delta = request.delta;
  w.reply_to = message;
  w.reply_to.payload = {};
  std::string key(request.key);
  auto [it, idle] = running_.try_emplace(key, nullptr);
  if (idle) it->second = std::make_unique<KeyQueue>();
  it->second->queued.push_back(std::move(w));
  if (idle) RunBatch(key);
}

void UpdateExecutor::RunBatch(const std::string& key) {
  KeyQueue& queue = *running_.at(key);
  std::vector<Waiting> batch = std::move(queue.queued);
  queue.queued.clear();
  std::vector<KeyOp> ops;
  ops.reserve(batch.size());
  for (Waiting& w : batch) ops.push_back(std::move(w.op));
  Spawn(Execute(key, std::move(ops)),
        [this, key, batch = std::move(batch)](absl::StatusOr<std::vector<KeyOpResult>> results) {
          for (size_t i = 0; i < batch.size(); ++i) {
            if (results.ok()) {
              (void)msgReply(ctx_, batch[i].reply_to, EncodeUpdateReply((*results)[i]));
            } else {
              (void)msgReplyError(ctx_, batch[i].reply_to, results.status());
            }
          }
          auto it = running_.find(key);
          if (it->second->queued.empty()) {
            running_.erase(it);
          } else {
            RunBatch(key);
          }
        });
}

Task<absl::StatusOr<std::vector<KeyOpResult>>> UpdateExecutor::Execute(std::string key,
                                                                       std::vector<KeyOp> ops) {
  const absl::Time give_up = absl::Now() + kRetryFor;
  absl::Duration backoff = absl::Microseconds(5);
  while (true) {
    TxHandle tx = txCreate(ctx_);
    absl::StatusOr<std::vector<KeyOpResult>> results = co_await applier_->Apply(*tx, key, ops);
    absl::Status status = results.status();
    if (status.ok()) {
      status = co_await TxCommit(*tx);
      if (status.ok()) {
        ++stats_.transactions;
        applier_->OnCommitted(ctx_, key, ops, *results);
        co_return results;
      }
    } else {
      txAbort(*tx);
    }
    const bool conflict = status.code() == absl::StatusCode::kAborted ||
                          status.code() == absl::StatusCode::kFailedPrecondition;
    if (!conflict) co_return status;
    if (absl::Now() >= give_up) co_return absl::AbortedError(absl::StrCat("gave up after conflicts: ", status.message()));
    ++stats_.retries;
    tx.reset();
    co_await SleepFor(ctx_, absl::Nanoseconds(absl::Uniform<int64_t>(rng_, 0, absl::ToInt64Nanoseconds(backoff) + 1)));
    backoff = std::min(backoff * 2, absl::Milliseconds(1));
  }
}

}  // namespace farm::kv
