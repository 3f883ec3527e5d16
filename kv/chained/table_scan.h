// The chained table's scan (KvClient::Scan): every partition's pairs, heads and chains,
// counted from lock-free READs while lookups, updates and expansions go on.
//
// A partition is walked from a view of its tables (kv/chained/chained_reader.h): the
// current table's heads, then, while it expands, the next table's buckets b and b + N of
// the heads the walk saw moved. The count is a fuzzy snapshot: each bucket with its
// chain as of one walk of it (walked again when a block was freed under the walk: its
// chain changed). A head that fails its READ as freed means the view's table stopped
// being the partition's (an expansion ended and freed it; a view may be stale from the
// start or go stale during the walk): the partition's count is dropped, its root READ
// again, and the partition walked again from the new view.
//
// Threads: ctx's worker thread (the reader's); continuations there.
#ifndef FARM_KV_CHAINED_TABLE_SCAN_H_
#define FARM_KV_CHAINED_TABLE_SCAN_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/chained/chained_reader.h"
#include "kv/chained/partition_map.h"
#include "kv/kv_client.h"

namespace farm::kv::chained {

// Walks of one partition (each after its view's table ended) before the scan gives up
// with DeadlineExceeded; walks of one bucket (each after its chain changed) likewise.
inline constexpr int kMaxPartitionWalks = 64;
inline constexpr int kMaxBucketWalks = 1000;

// Adds partition `partition` to `scan`, starting from `view` (none: READ the root
// first). On an error `scan` holds what it held before the call.
Task<absl::Status> ScanPartition(Context& ctx, ChainedReader& reader, const ChainedTable& table,
                                 uint32_t partition, std::optional<PartitionView> view, TableScan& scan);

// Every partition, each from its root READ now.
Task<absl::StatusOr<TableScan>> ScanTable(Context& ctx, ChainedReader& reader, ChainedTable table);

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_TABLE_SCAN_H_
