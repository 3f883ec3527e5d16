// CuckooTxn: what CuckooClient::BeginTxn returns. Multi-key transactions cannot be served
// by a one-sided design without locks (Nessie has none: its operations are atomic one key
// at a time, and a lock word would leave a crashed client's keys locked), so every call
// answers Unimplemented (kUnimplementedTxn) on the client's thread, and Commit too.
// Use the hopscotch or linear layout for MULTI/EXEC and WATCH.
#ifndef FARM_KV_CUCKOO_CUCKOO_TXN_H_
#define FARM_KV_CUCKOO_CUCKOO_TXN_H_

#include <optional>
#include <string>

#include "farm/api/farm.h"
#include "kv/store.h"

namespace farm::kv::cuckoo {

inline constexpr const char* kUnimplementedTxn =
    "the cuckoo (Nessie) layout has no multi-key transactions: its operations are "
    "one-sided and atomic per key only; use the hopscotch or linear layout";

class CuckooTxn final : public StoreTxn {
 public:
  explicit CuckooTxn(Context& ctx) : ctx_(ctx) {}
  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override {
    Fail(std::move(done));
  }
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override {
    Fail(std::move(done));
  }
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override {
    Fail(std::move(done));
  }
  void Increment(absl::string_view key, int64_t delta,
                 Done<absl::StatusOr<int64_t>> done) override {
    Fail(std::move(done));
  }
  void Commit(Done<absl::Status> done) override { Fail(std::move(done)); }

 private:
  template <typename T>
  void Fail(Done<T> done) {
    ctx_.Defer(
        [done = std::move(done)]() mutable { done(absl::UnimplementedError(kUnimplementedTxn)); });
  }
  Context& ctx_;
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_CUCKOO_TXN_H_
