#include "kv/chained/chained_client.h"

#include <utility>

#include "farm/api/coro.h"
#include "kv/chained/chained_ops.h"
#include "kv/chained/table_scan.h"
#include "kv/layout.h"
#include "kv/layout_txn.h"

namespace farm::kv::chained {

Addr ChainedClient::UpdateTarget(absl::string_view key) const {
  return table_.map->partition(table_.map->PartitionOf(HashKey(key))).root.addr;
}

void ChainedClient::Scan(Done<absl::StatusOr<TableScan>> done) {
  Spawn(ScanTable(ctx(), reader(), table_), std::move(done));
}

std::unique_ptr<StoreTxn> ChainedClient::BeginTxn() { return std::make_unique<LayoutTxn<TxnOpsOf<ChainedTable>>>(ctx(), TxnOpsOf<ChainedTable>(table_)); }

}  // namespace farm::kv::chained
