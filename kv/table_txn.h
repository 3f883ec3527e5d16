// TableTxn: a transaction over several keys of the hopscotch table (kv/store.h's
// StoreTxn; Redis MULTI/EXEC and WATCH): a LayoutTxn (kv/layout_txn.h) over the table's
// operations (kv/table_ops.h), with the joint versions of the buckets it wrote sealed at
// commit. Made by TableClient::BeginTxn; used on the client's thread only. The map
// must outlive it.
#ifndef FARM_KV_TABLE_TXN_H_
#define FARM_KV_TABLE_TXN_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kv/layout_txn.h"
#include "kv/shard_map.h"
#include "kv/table_ops.h"

namespace farm::kv {

// The hopscotch table's Ops for LayoutTxn.
class HopscotchTxnOps {
 public:
  explicit HopscotchTxnOps(const ShardMap& map) : map_(&map) {}
  Task<absl::StatusOr<std::optional<std::string>>> Lookup(Tx& tx, std::string key) const {
    return LookupInTx(tx, *map_, std::move(key));
  }
  // The buckets it writes are remembered for BeforeCommit.
  Task<absl::StatusOr<std::vector<KeyOpResult>>> Apply(Tx& tx, std::string key,
                                                       std::vector<KeyOp> ops) {
    return ApplyToKey(tx, *map_, writes_, std::move(key), std::move(ops));
  }
  // Invariant 3 of kv/table_ops.h, once, after the last Apply.
  void BeforeCommit() { writes_.Seal(); }

 private:
  const ShardMap* map_;
  BucketWrites writes_;
};

using TableTxn = LayoutTxn<HopscotchTxnOps>;

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_TXN_H_
