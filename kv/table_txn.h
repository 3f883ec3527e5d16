// TableTxn: a transaction over several keys of the hopscotch table (kv/store.h's
// StoreTxn; Redis MULTI/EXEC and WATCH): the table's operations (kv/table_ops.h) in one
// distributed FaRM transaction, one operation at a time, with the joint versions sealed
// at commit. Made by TableClient::BeginTxn; used on the client's thread only.
#ifndef FARM_KV_TABLE_TXN_H_
#define FARM_KV_TABLE_TXN_H_

#include <optional>
#include <string>

#include "kv/store.h"
#include "kv/table_client.h"
#include "kv/table_ops.h"
#include "kv/tx_operation.h"

namespace farm::kv {

class TableTxn final : public StoreTxn {
 public:
  explicit TableTxn(TableClient& client) : client_(client), tx_(txCreate(client.ctx())) {}

  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  void Commit(Done<absl::Status> done) override;

 private:
  void Apply(absl::string_view key, KeyOp op, Done<absl::StatusOr<KeyOpResult>> done);

  TableClient& client_;
  TxHandle tx_;
  BucketWrites writes_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_TXN_H_
