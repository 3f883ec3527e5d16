// What the layouts' scans of their keys share (KvClient::ScanKeys; kv/table_key_scan.h,
// kv/linear/linear_key_scan.h): a page is a window of the table read in one read-only
// FaRM transaction, and a window that conflicts with updates is read again.
//
// Threads: ctx's worker thread.
#ifndef FARM_KV_KEY_SCAN_PAGES_H_
#define FARM_KV_KEY_SCAN_PAGES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/store.h"

namespace farm::kv {

// A page's window, in the layout's units (home buckets, slot groups), at most.
inline constexpr uint32_t kMaxScanWindow = 256;

// The keys of out-of-line pairs: their value objects (kv/layout.h's format) read in `tx`
// together, each key appended to `keys`. A value freed meanwhile is the conflict it is
// (Aborted, Retryable).
Task<absl::Status> AppendValueObjectKeys(Tx& tx, std::vector<FatPtr> values,
                                         std::vector<std::string>& keys);

// Commits `tx`, read-only: its validation checks every object read is still at the
// version read (Retryable's Aborted when not).
Task<absl::Status> ValidateScan(Tx& tx);

// attempt(window) until it answers something other than Aborted: after a pause that
// grows with each attempt, and with the window halved (down to 1) every fourth
// attempt. Unavailable after 40 conflicts.
Task<absl::StatusOr<KeyPage>> RetryScanPage(
    Context& ctx, uint32_t window,
    std::function<Task<absl::StatusOr<KeyPage>>(uint32_t window)> attempt);

}  // namespace farm::kv

#endif  // FARM_KV_KEY_SCAN_PAGES_H_
