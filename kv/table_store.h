// TableStore: the hashtable as a kv::Store (kv/store.h), for the services. One per
// worker thread, over that thread's TableClient. Single-key operations are the
// client's (lock-free lookups, shipped updates); StoreTxn runs the table's operations
// (kv/table_ops.h) in one distributed FaRM transaction, one operation at a time.
#ifndef FARM_KV_TABLE_STORE_H_
#define FARM_KV_TABLE_STORE_H_

#include <memory>

#include "kv/store.h"
#include "kv/table_client.h"

namespace farm::kv {

class TableStore : public Store {
 public:
  explicit TableStore(TableClient& client) : client_(client) {}

  StoreLimits limits() const override { return StoreLimits{kMaxKeyBytes, kMaxValueBytes}; }
  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override;
  void MultiGet(absl::Span<const std::string> keys,
                Done<absl::StatusOr<std::vector<std::optional<std::string>>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  void Stats(Done<absl::StatusOr<StoreStats>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;

 private:
  TableClient& client_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_STORE_H_
