// TableStore: a key-value table of any layout as a kv::Store (kv/store.h), for the
// services. One per worker thread, over that thread's KvClient (kv/kv_client.h):
// single-key operations are the client's (lock-free lookups, shipped updates), and
// BeginTxn is the layout's own multi-key transaction (KvClient::BeginTxn).
#ifndef FARM_KV_TABLE_STORE_H_
#define FARM_KV_TABLE_STORE_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "kv/key_ops.h"
#include "kv/kv_client.h"
#include "kv/store.h"

namespace farm::kv {

class TableStore final : public Store {
 public:
  explicit TableStore(KvClient& client) : client_(client) {}

  StoreLimits limits() const override { return StoreLimits{kMaxKeyBytes, kMaxValueBytes}; }
  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override;
  void MultiGet(absl::Span<const std::string> keys,
                Done<absl::StatusOr<std::vector<std::optional<std::string>>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  void Stats(Done<absl::StatusOr<StoreStats>> done) override;
  void ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) override {
    client_.ScanKeys(cursor, count, std::move(done));
  }
  std::unique_ptr<StoreTxn> BeginTxn() override { return client_.BeginTxn(); }

 private:
  KvClient& client_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_STORE_H_
