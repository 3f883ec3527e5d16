// The linear-probing table's scan of its keys (KvClient::ScanKeys; the contract is
// kv/store.h's Store::ScanKeys).
//
// A cursor is a slot group's position in the table (group g holds slots g*G ..
// g*G + G - 1, kv/linear/probe_map.h); 0 begins a scan, and the page that reaches the
// table's end answers 0. A page is a window of adjacent groups read, with the value
// objects of their out-of-line pairs, in one read-only FaRM transaction (groups of two
// shards, or of two machines, alike), and its keys are the pairs in them. A pair never
// moves (invariant 2 of kv/linear/linear_ops.h), so a key present throughout a scan is
// in the one page that covers its slot; a key removed and inserted again meanwhile may
// take another slot, and be in two pages.
//
// A window that conflicts with updates is read again (kv/key_scan_pages.h RetryScanPage).
// Threads: ctx's worker thread.
#ifndef FARM_KV_LINEAR_LINEAR_KEY_SCAN_H_
#define FARM_KV_LINEAR_LINEAR_KEY_SCAN_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/linear/probe_map.h"
#include "kv/store.h"

namespace farm::kv::linear {

// One page from `cursor`, with about `count` keys: a window of 2 * count slots (whole
// groups, at most kMaxScanWindow groups). A cursor past the end gives an empty page
// with cursor 0.
Task<absl::StatusOr<KeyPage>> ScanKeyPage(Context& ctx, std::shared_ptr<const ProbeMap> map,
                                          uint64_t cursor, uint32_t count);

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_KEY_SCAN_H_
