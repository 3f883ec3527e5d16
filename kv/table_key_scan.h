// The hopscotch table's scan of its keys (KvClient::ScanKeys, Redis SCAN; the contract
// is kv/store.h's Store::ScanKeys).
//
// A cursor is a position among the table's home buckets in shard order: bucket b of
// shard s is at sum over earlier shards i of (buckets_i - 1), plus b (a shard's last
// bucket is no key's home, kv/shard_map.h). 0 begins a scan, and the page that reaches
// the end answers 0.
//
// A page is a window of adjacent home buckets [first, end) of one shard, read in one
// read-only FaRM transaction: buckets first..end (end is the last one's neighbour),
// the window's overflow chains and its out-of-line pairs' value objects. Its keys are
// the pairs whose home is in the window: by invariant 1 of kv/table_ops.h that is every
// pair with such a home, and the transaction's validation makes them one state of the
// table, so a key present throughout the page is in it whatever moved meanwhile. A key
// has one home, in one window, so a scan returns it at most once.
//
// A window that conflicts with updates is read again (kv/key_scan_pages.h RetryScanPage).
// Threads: ctx's worker thread.
#ifndef FARM_KV_TABLE_KEY_SCAN_H_
#define FARM_KV_TABLE_KEY_SCAN_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/shard_map.h"
#include "kv/store.h"

namespace farm::kv {

// One page from `cursor`: a window of (count + 1) / 2 home buckets, at most
// kMaxScanWindow and within the page's ScanBudget — about `count` keys with H = 8 and the
// table half full, more with a larger H or a fuller table. A cursor past the end gives
// an empty page with cursor 0.
Task<absl::StatusOr<KeyPage>> ScanKeyPage(Context& ctx, std::shared_ptr<const ShardMap> map,
                                          uint64_t cursor, uint32_t count);

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_KEY_SCAN_H_
