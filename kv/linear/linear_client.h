// LinearClient: one worker thread's handle on the linear-probing table, its KvClient
// (kv/kv_client.h): lock-free lookups and multi-gets (LinearReader), updates shipped
// to the primary of the key's home group (the table's update message, run there by the
// update executor with flat combining: single-machine transactions while the key's
// probe stays in its home shard), transactions (a LayoutTxn over kv/linear/linear_ops.h,
// kv/layout_txn.h), a scan for statistics and one of the keys.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_LINEAR_LINEAR_CLIENT_H_
#define FARM_KV_LINEAR_LINEAR_CLIENT_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/kv_client.h"
#include "kv/linear/linear_reader.h"
#include "kv/linear/linear_table.h"
#include "kv/reader_client.h"

namespace farm::kv::linear {

class LinearClient final : public ReaderClient<LinearClient, LinearReader> {
 public:
  LinearClient(Context& ctx, std::shared_ptr<const LinearTable> table, MsgId update_msg)
      : ReaderClient(ctx, update_msg, table), table_(std::move(table)) {}

  void Scan(Done<absl::StatusOr<TableScan>> done) override;
  // Pages of slot groups, each read in one transaction (kv/linear/linear_key_scan.h).
  void ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;

  // The key's home group: its primary runs the key's updates.
  Addr UpdateTarget(absl::string_view key) const;
  const ProbeMap& map() const { return *table_->map; }
  const LinearTable& table() const { return *table_; }

 private:
  const std::shared_ptr<const LinearTable> table_;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_CLIENT_H_
