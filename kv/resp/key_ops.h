// KeyOps: where a data command's reads and writes go — the Store directly, or an open
// StoreTxn (inside EXEC, or a multi-key command that must be atomic). Data commands are
// written once against this interface (data_commands.h).
//
// Thread and lifetime rules are the Store's (kv/store.h): calls on the owning worker
// thread, callbacks later on it. The key and value string_views must stay valid until
// the callback has run (callers keep the Call that owns them). Callbacks hold a
// std::shared_ptr to the KeyOps they need, so a KeyOps outlives its operations.
#ifndef FARM_KV_RESP_KEY_OPS_H_
#define FARM_KV_RESP_KEY_OPS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kv/store.h"

namespace farm::kv::resp {

using Value = std::optional<std::string>;

class KeyOps {
 public:
  virtual ~KeyOps() = default;
  virtual void Get(absl::string_view key, Done<absl::StatusOr<Value>> done) = 0;
  // One result per key, in order.
  virtual void MultiGet(absl::Span<const std::string> keys,
                        Done<absl::StatusOr<std::vector<Value>>> done) = 0;
  virtual void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) = 0;
  virtual void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) = 0;
  virtual void Increment(absl::string_view key, int64_t delta,
                         Done<absl::StatusOr<int64_t>> done) = 0;
  // True inside a transaction: several operations are already atomic together.
  virtual bool transactional() const = 0;
};

// An encoded reply, or an error for StoreErrorReply (store_replies.h).
using CommandResult = absl::StatusOr<std::string>;
// A command's operations on `ops`, ending in done(reply) or done(error).
using CommandBody = std::function<void(std::shared_ptr<KeyOps> ops, Done<CommandResult> done)>;

// Operations on `store` directly (each one linearizable on its own).
std::shared_ptr<KeyOps> MakeStoreOps(Store* store);

// Operations inside `txn`; MultiGet is a sequence of Gets. An operation's error that is
// the store's (a conflict, a machine that did not answer, a full store) dooms the whole
// transaction, whatever the command made of it: failure() keeps the first, and RunInTxn
// commits nothing after one. Only a command's own errors (InvalidArgument: over a
// limit, not an integer; OutOfRange: an overflow; DataLoss: a value that does not
// decode) are that command's reply, and the transaction goes on (as Redis's EXEC).
class TxnOps : public KeyOps {
 public:
  explicit TxnOps(std::shared_ptr<StoreTxn> txn) : txn_(std::move(txn)) {}
  const absl::Status& failure() const { return *failure_; }
  void Get(absl::string_view key, Done<absl::StatusOr<Value>> done) override;
  void MultiGet(absl::Span<const std::string> keys,
                Done<absl::StatusOr<std::vector<Value>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  bool transactional() const override { return true; }
  void Commit(Done<absl::Status> done) { txn_->Commit(std::move(done)); }

 private:
  // `done`, after noting its status in failure_ if it is the store's.
  template <typename T>
  Done<T> Noting(Done<T> done);

  std::shared_ptr<StoreTxn> txn_;
  std::shared_ptr<absl::Status> failure_ = std::make_shared<absl::Status>();
};

// The work of one transaction attempt: operations on `ops`, then done(reply) to commit,
// or done(error) to give up (nothing is committed). Called once per attempt.
using TxnBody =
    std::function<void(std::shared_ptr<TxnOps> ops, Done<absl::StatusOr<std::string>> done)>;

// Runs `body` in a transaction and commits it; done gets the body's reply once the
// commit succeeded, the body's error (or the first store error an operation of it met,
// TxnOps::failure(), even if the body replied), or the commit's error. With `txn` null, each
// attempt uses a fresh store->BeginTxn() and an Aborted commit (or an Aborted operation
// the body reports) is retried, up to
// `max_attempts` attempts in all (then Aborted is returned). With `txn` given (WATCH),
// there is one attempt and Aborted is returned as is.
void RunInTxn(Store* store, std::shared_ptr<StoreTxn> txn, int max_attempts, TxnBody body,
              Done<absl::StatusOr<std::string>> done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_KEY_OPS_H_
