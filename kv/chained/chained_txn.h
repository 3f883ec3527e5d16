// ChainedTxn: a transaction over several keys of the chained table (kv/store.h's
// StoreTxn; Redis MULTI/EXEC and WATCH): the table's operations
// (kv/chained/chained_ops.h) in one distributed FaRM transaction, one operation at a
// time. Made by ChainedClient::BeginTxn; used on the client's thread only. Its
// inserts are not counted by the expansion trigger (kv/chained/expander.h).
#ifndef FARM_KV_CHAINED_CHAINED_TXN_H_
#define FARM_KV_CHAINED_CHAINED_TXN_H_

#include <optional>
#include <string>

#include "kv/chained/chained_client.h"
#include "kv/key_ops.h"
#include "kv/store.h"

namespace farm::kv::chained {

class ChainedTxn final : public StoreTxn {
 public:
  explicit ChainedTxn(ChainedClient& client) : client_(client), tx_(txCreate(client.ctx())) {}

  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  void Commit(Done<absl::Status> done) override { txCommit(*tx_, std::move(done)); }

 private:
  void Apply(absl::string_view key, KeyOp op, Done<absl::StatusOr<KeyOpResult>> done);

  ChainedClient& client_;
  TxHandle tx_;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_TXN_H_
