#include "kv/resp/key_ops.h"

#include <utility>

#include "kv/resp/async_steps.h"

namespace farm::kv::resp {
namespace {

class StoreOps : public KeyOps {
 public:
  explicit StoreOps(Store* store) : store_(store) {}
  void Get(absl::string_view key, Done<absl::StatusOr<Value>> done) override {
    store_->Get(key, std::move(done));
  }
  void MultiGet(absl::Span<const std::string> keys,
                Done<absl::StatusOr<std::vector<Value>>> done) override {
    store_->MultiGet(keys, std::move(done));
  }
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override {
    store_->Put(key, value, std::move(done));
  }
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override {
    store_->Remove(key, std::move(done));
  }
  void Increment(absl::string_view key, int64_t delta,
                 Done<absl::StatusOr<int64_t>> done) override {
    store_->Increment(key, delta, std::move(done));
  }
  bool transactional() const override { return false; }

 private:
  Store* store_;
};

struct TxnRun {
  Store* store = nullptr;
  std::shared_ptr<StoreTxn> given;  // WATCH's transaction; not retried
  int attempts_left = 0;
  TxnBody body;
  Done<absl::StatusOr<std::string>> done;
};

void Attempt(std::shared_ptr<TxnRun> run) {
  std::shared_ptr<StoreTxn> txn = run->given;
  if (txn == nullptr) txn = std::shared_ptr<StoreTxn>(run->store->BeginTxn());
  auto ops = std::make_shared<TxnOps>(std::move(txn));
  --run->attempts_left;
  run->body(ops, [run, ops](absl::StatusOr<std::string> reply) mutable {
    if (reply.ok() && !ops->failure().ok()) reply = ops->failure();  // a reply made of a store error
    if (!reply.ok()) {  // ops dropped: the txn aborts
      // A conflict an operation ran into before the commit: as an Aborted commit.
      if (absl::IsAborted(reply.status()) && run->given == nullptr && run->attempts_left > 0) {
        return Attempt(std::move(run));
      }
      return run->done(reply.status());
    }
    ops->Commit([run, ops, reply = std::move(*reply)](absl::Status s) mutable {
      if (s.ok()) return run->done(std::move(reply));
      if (absl::IsAborted(s) && run->given == nullptr && run->attempts_left > 0) {
        return Attempt(std::move(run));
      }
      run->done(s);
    });
  });
}

}  // namespace

std::shared_ptr<KeyOps> MakeStoreOps(Store* store) { return std::make_shared<StoreOps>(store); }

namespace {

// The store's errors, as opposed to a command's own (TxnOps).
bool IsStoreFailure(const absl::Status& s) {
  return !s.ok() && !absl::IsInvalidArgument(s) && !absl::IsOutOfRange(s) && !absl::IsDataLoss(s);
}

template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& r) {
  return r.status();
}
const absl::Status& StatusOf(const absl::Status& s) { return s; }

}  // namespace

template <typename T>
Done<T> TxnOps::Noting(Done<T> done) {
  return [failure = failure_, done = std::move(done)](T result) mutable {
    if (failure->ok() && IsStoreFailure(StatusOf(result))) *failure = StatusOf(result);
    done(std::move(result));
  };
}

void TxnOps::Get(absl::string_view key, Done<absl::StatusOr<Value>> done) {
  txn_->Get(key, Noting(std::move(done)));
}

void TxnOps::MultiGet(absl::Span<const std::string> keys,
                      Done<absl::StatusOr<std::vector<Value>>> done) {
  struct State {
    std::vector<Value> values;
    absl::Status status;
    Done<absl::StatusOr<std::vector<Value>>> done;
  };
  auto state = std::make_shared<State>();
  state->values.resize(keys.size());
  state->done = std::move(done);
  std::shared_ptr<StoreTxn> txn = txn_;
  std::shared_ptr<absl::Status> failure = failure_;
  RunSequentially(
      keys.size(),
      [state, txn, failure, keys](size_t i, absl::AnyInvocable<void()> next) {
        if (!state->status.ok()) return next();
        txn->Get(keys[i], [state, i, failure, next = std::move(next)](absl::StatusOr<Value> v) mutable {
          if (failure->ok() && IsStoreFailure(v.status())) *failure = v.status();
          if (v.ok()) {
            state->values[i] = std::move(*v);
          } else {
            state->status = v.status();
          }
          next();
        });
      },
      [state] {
        if (state->status.ok()) {
          state->done(std::move(state->values));
        } else {
          state->done(state->status);
        }
      });
}

void TxnOps::Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) {
  txn_->Put(key, value, Noting(std::move(done)));
}

void TxnOps::Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) {
  txn_->Remove(key, Noting(std::move(done)));
}

void TxnOps::Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) {
  txn_->Increment(key, delta, Noting(std::move(done)));
}

void RunInTxn(Store* store, std::shared_ptr<StoreTxn> txn, int max_attempts, TxnBody body,
              Done<absl::StatusOr<std::string>> done) {
  auto run = std::make_shared<TxnRun>();
  run->store = store;
  run->given = std::move(txn);
  run->attempts_left = max_attempts < 1 ? 1 : max_attempts;
  run->body = std::move(body);
  run->done = std::move(done);
  Attempt(std::move(run));
}

}  // namespace farm::kv::resp
