// TableClient: one worker thread's handle on the hopscotch table, its KvClient
// (kv/kv_client.h): lock-free lookups and multi-gets (TableReader), updates shipped to
// the primary of the key's shard (kKvUpdateMsgId, run there as single-machine
// transactions with flat combining), transactions (kv/table_txn.h) and a scan for
// statistics.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_TABLE_CLIENT_H_
#define FARM_KV_TABLE_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/kv_client.h"
#include "kv/messages.h"
#include "kv/shard_map.h"
#include "kv/store.h"
#include "kv/table_ops.h"
#include "kv/table_reader.h"

namespace farm::kv {

class TableClient final : public KvClient {
 public:
  // Updates go to `update_msg` (the table's TableIdentity).
  TableClient(Context& ctx, std::shared_ptr<const ShardMap> map, MsgId update_msg = kKvUpdateMsgId);

  void Get(absl::string_view key, GetDone done) override {
    if (KeysWithinLimit(ctx_, key, done)) reader_.Get(key, std::move(done));
  }
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done) override {
    if (KeysWithinLimit(ctx_, keys, done)) reader_.MultiGet(keys, std::move(done));
  }
  // kPut (value), kRemove, kIncrement (delta). InvalidArgument for a key or value over
  // the limits (checked here, nothing is sent); the op's own error in its result.
  void Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
              Done<absl::StatusOr<KeyOpResult>> done) override;
  void Scan(Done<absl::StatusOr<TableScan>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;
  const LookupStats& lookup_stats() const override { return reader_.stats(); }

  Context& ctx() const override { return ctx_; }
  const ShardMap& map() const { return *map_; }
  const std::shared_ptr<const ShardMap>& shared_map() const { return map_; }
  TableReader& reader() { return reader_; }

 private:
  Context& ctx_;
  const std::shared_ptr<const ShardMap> map_;
  const MsgId update_msg_;
  TableReader reader_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_CLIENT_H_
