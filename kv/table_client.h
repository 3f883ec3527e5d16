// TableClient: one worker thread's handle on the hopscotch table, its KvClient
// (kv/kv_client.h): lock-free lookups and multi-gets (TableReader), updates shipped to
// the primary of the key's shard (kKvUpdateMsgId, run there as single-machine
// transactions with flat combining), transactions (kv/table_txn.h), a scan for
// statistics and one of the keys.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_TABLE_CLIENT_H_
#define FARM_KV_TABLE_CLIENT_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/kv_client.h"
#include "kv/messages.h"
#include "kv/reader_client.h"
#include "kv/shard_map.h"
#include "kv/store.h"
#include "kv/table_ops.h"
#include "kv/table_reader.h"

namespace farm::kv {

class TableClient final : public ReaderClient<TableClient, TableReader> {
 public:
  // Updates go to `update_msg` (the table's TableIdentity).
  TableClient(Context& ctx, std::shared_ptr<const ShardMap> map, MsgId update_msg = kKvUpdateMsgId)
      : ReaderClient(ctx, update_msg, map), map_(std::move(map)) {}

  void Scan(Done<absl::StatusOr<TableScan>> done) override;
  // Pages of home buckets, each read in one transaction (kv/table_key_scan.h).
  void ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;

  // The key's home bucket: its shard's primary runs the key's updates.
  Addr UpdateTarget(absl::string_view key) const;
  const ShardMap& map() const { return *map_; }
  const std::shared_ptr<const ShardMap>& shared_map() const { return map_; }

 private:
  const std::shared_ptr<const ShardMap> map_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_CLIENT_H_
