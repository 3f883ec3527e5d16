// CachedKeyOps: the KeyOps a WriteCombiner step runs its writes on (write_combiner.h).
// Every write of a step is on one key, so the key's value is read from the transaction
// once, then read and changed in memory by write after write, and written back to the
// transaction once, by WriteBack, before the commit. A step of n read-modify-writes so
// costs one transaction read and one write, not n of each.
//
// Semantics are the transaction's: a read sees the step's earlier writes; the first
// read records the key's version, so the commit fails if another client changed it.
// Operations on other keys, Increment and MultiGet go to the transaction after the
// cached value is written back (no combined command uses them).
//
// Unlike other KeyOps, operations answered from the cache call back inside the call
// (the commands' bodies allow it: RunSequentially drives them with constant stack).
// Threads: the store's thread only. Lifetime: held by the step's callbacks.
#ifndef FARM_KV_RESP_CACHED_KEY_OPS_H_
#define FARM_KV_RESP_CACHED_KEY_OPS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "kv/resp/key_ops.h"

namespace farm::kv::resp {

class CachedKeyOps final : public KeyOps {
 public:
  CachedKeyOps(std::string key, std::shared_ptr<TxnOps> txn)
      : key_(std::move(key)), txn_(std::move(txn)) {}

  void Get(absl::string_view key, Done<absl::StatusOr<Value>> done) override;
  void MultiGet(absl::Span<const std::string> keys,
                Done<absl::StatusOr<std::vector<Value>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  bool transactional() const override { return true; }

  // Writes the cached value to the transaction if it changed; then `done`.
  void WriteBack(Done<absl::Status> done);
  void Commit(Done<absl::Status> done) { txn_->Commit(std::move(done)); }

 private:
  // Runs `then` once the key's value is cached (read from the transaction if needed).
  void Load(absl::AnyInvocable<void(absl::Status)> then);

  const std::string key_;
  const std::shared_ptr<TxnOps> txn_;
  bool loaded_ = false;
  bool dirty_ = false;
  Value value_;  // valid when loaded_
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_CACHED_KEY_OPS_H_
