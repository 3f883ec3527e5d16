// TableClient: one worker thread's handle on the key-value store: lock-free lookups and
// multi-gets (TableReader), updates shipped to the primary of the key's shard
// (kKvUpdateMsgId, run there as single-machine transactions with flat combining), and
// a scan for statistics.
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
#include "kv/messages.h"
#include "kv/shard_map.h"
#include "kv/store.h"
#include "kv/table_ops.h"
#include "kv/table_reader.h"

namespace farm::kv {

// What a scan of the table finds (a fuzzy snapshot: concurrent updates may or may not
// be counted). Memory counts bucket strides exactly and blocks and values by their
// stored size rounded to 16 bytes (their slot may be up to 3.5% larger).
struct TableScan {
  uint64_t pairs = 0;
  uint64_t pairs_in_buckets = 0;
  uint64_t bucket_slots = 0;
  uint64_t overflow_blocks = 0;
  uint64_t out_of_line = 0;
  uint64_t pair_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t longest_chain = 0;
  double occupancy() const { return bucket_slots ? double(pairs) / double(bucket_slots) : 0; }
  double utilisation() const { return memory_bytes ? double(pair_bytes) / double(memory_bytes) : 0; }
};

class TableClient {
 public:
  // Updates go to `update_msg` (the table's TableIdentity).
  TableClient(Context& ctx, std::shared_ptr<const ShardMap> map, MsgId update_msg = kKvUpdateMsgId);

  void Get(absl::string_view key, TableReader::GetDone done) { reader_.Get(key, std::move(done)); }
  void MultiGet(absl::Span<const std::string> keys, TableReader::MultiGetDone done) {
    reader_.MultiGet(keys, std::move(done));
  }
  // kPut (value), kRemove, kIncrement (delta). InvalidArgument for a key or value over
  // the limits (checked here, nothing is sent); the op's own error in its result.
  void Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
              Done<absl::StatusOr<KeyOpResult>> done);
  void Scan(Done<absl::StatusOr<TableScan>> done);

  Context& ctx() const { return ctx_; }
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
