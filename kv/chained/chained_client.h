// ChainedClient: one worker thread's handle on the chained table, its KvClient
// (kv/kv_client.h): lock-free lookups and multi-gets (ChainedReader), updates shipped
// to the primary of the key's partition root (the table's update message, run there by
// the update executor with flat combining as single-machine transactions: every table
// of a partition lives on the root's machine), transactions (a LayoutTxn over
// kv/chained/chained_ops.h, kv/layout_txn.h; their inserts are not counted by the
// expansion trigger)
// and a scan.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_CHAINED_CHAINED_CLIENT_H_
#define FARM_KV_CHAINED_CHAINED_CLIENT_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/chained/chained_reader.h"
#include "kv/chained/partition_map.h"
#include "kv/kv_client.h"
#include "kv/reader_client.h"

namespace farm::kv::chained {

class ChainedClient final : public ReaderClient<ChainedClient, ChainedReader> {
 public:
  ChainedClient(Context& ctx, ChainedTable table, MsgId update_msg)
      : ReaderClient(ctx, update_msg, table), table_(std::move(table)) {}

  // Every partition's current table (and next, while expanding): bucket_slots are the
  // slots of the heads that hold pairs' homes (S per unmoved current head, 2S per moved
  // one), pairs_in_buckets the pairs in heads, overflow_blocks and longest_chain the
  // chains' blocks, buckets_in_use the heads holding a pair.
  void Scan(Done<absl::StatusOr<TableScan>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;

  // The key's partition root: its primary holds every table of the partition and runs
  // the key's updates.
  Addr UpdateTarget(absl::string_view key) const;
  const ChainedTable& table() const { return table_; }

 private:
  const ChainedTable table_;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_CLIENT_H_
