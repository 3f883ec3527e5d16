// LinearTxn: a transaction over several keys of the linear-probing table (kv/store.h's
// StoreTxn; Redis MULTI/EXEC and WATCH): the table's operations
// (kv/linear/linear_ops.h) in one distributed FaRM transaction, one operation at a
// time. Made by LinearClient::BeginTxn; used on the client's thread only.
#ifndef FARM_KV_LINEAR_LINEAR_TXN_H_
#define FARM_KV_LINEAR_LINEAR_TXN_H_

#include <optional>
#include <string>

#include "kv/key_ops.h"
#include "kv/linear/linear_client.h"
#include "kv/store.h"

namespace farm::kv::linear {

class LinearTxn final : public StoreTxn {
 public:
  explicit LinearTxn(LinearClient& client) : client_(client), tx_(txCreate(client.ctx())) {}

  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  void Commit(Done<absl::Status> done) override { txCommit(*tx_, std::move(done)); }

 private:
  void Apply(absl::string_view key, KeyOp op, Done<absl::StatusOr<KeyOpResult>> done);

  LinearClient& client_;
  TxHandle tx_;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_TXN_H_
