// LinearClient: one worker thread's handle on the linear-probing table, its KvClient
// (kv/kv_client.h): lock-free lookups and multi-gets (LinearReader), updates shipped
// to the primary of the key's home group (the table's update message, run there by the
// update executor with flat combining: single-machine transactions while the key's
// probe stays in its home shard), transactions (kv/linear/linear_txn.h) and a scan.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_LINEAR_LINEAR_CLIENT_H_
#define FARM_KV_LINEAR_LINEAR_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/kv_client.h"
#include "kv/linear/linear_reader.h"
#include "kv/linear/linear_table.h"

namespace farm::kv::linear {

class LinearClient final : public KvClient {
 public:
  LinearClient(Context& ctx, std::shared_ptr<const LinearTable> table, MsgId update_msg);

  void Get(absl::string_view key, GetDone done) override {
    if (KeysWithinLimit(ctx_, key, done)) reader_.Get(key, std::move(done));
  }
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done) override {
    if (KeysWithinLimit(ctx_, keys, done)) reader_.MultiGet(keys, std::move(done));
  }
  // InvalidArgument for a key or value over the limits (checked here, nothing is sent).
  void Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
              Done<absl::StatusOr<KeyOpResult>> done) override;
  void Scan(Done<absl::StatusOr<TableScan>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;
  const LookupStats& lookup_stats() const override { return reader_.stats(); }
  Context& ctx() const override { return ctx_; }

  LinearReader& reader() { return reader_; }
  const ProbeMap& map() const { return *table_->map; }
  const LinearTable& table() const { return *table_; }

 private:
  Context& ctx_;
  const std::shared_ptr<const LinearTable> table_;
  const MsgId update_msg_;
  LinearReader reader_;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_CLIENT_H_
