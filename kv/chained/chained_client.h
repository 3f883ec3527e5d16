// ChainedClient: one worker thread's handle on the chained table, its KvClient
// (kv/kv_client.h): lock-free lookups and multi-gets (ChainedReader), updates shipped
// to the primary of the key's partition root (the table's update message, run there by
// the update executor with flat combining as single-machine transactions: every table
// of a partition lives on the root's machine), transactions (kv/chained/chained_txn.h)
// and a scan.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_CHAINED_CHAINED_CLIENT_H_
#define FARM_KV_CHAINED_CHAINED_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/chained/chained_reader.h"
#include "kv/chained/partition_map.h"
#include "kv/kv_client.h"

namespace farm::kv::chained {

class ChainedClient final : public KvClient {
 public:
  ChainedClient(Context& ctx, ChainedTable table, MsgId update_msg);

  void Get(absl::string_view key, GetDone done) override {
    if (KeysWithinLimit(ctx_, key, done)) reader_.Get(key, std::move(done));
  }
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done) override {
    if (KeysWithinLimit(ctx_, keys, done)) reader_.MultiGet(keys, std::move(done));
  }
  // InvalidArgument for a key or value over the limits (checked here, nothing is sent).
  void Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
              Done<absl::StatusOr<KeyOpResult>> done) override;
  // Every partition's current table (and next, while expanding): bucket_slots are the
  // slots of the heads that hold pairs' homes (S per unmoved current head, 2S per moved
  // one), pairs_in_buckets the pairs in heads, overflow_blocks and longest_chain the
  // chains' blocks, buckets_in_use the heads holding a pair.
  void Scan(Done<absl::StatusOr<TableScan>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;
  const LookupStats& lookup_stats() const override { return reader_.stats(); }
  Context& ctx() const override { return ctx_; }

  ChainedReader& reader() { return reader_; }
  const ChainedTable& table() const { return table_; }

 private:
  Context& ctx_;
  const ChainedTable table_;
  const MsgId update_msg_;
  ChainedReader reader_;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_CLIENT_H_
