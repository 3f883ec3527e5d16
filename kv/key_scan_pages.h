// What the layouts' scans of their keys share (KvClient::ScanKeys; kv/table_key_scan.h,
// kv/linear/linear_key_scan.h): a page is a window of the table read in one read-only
// FaRM transaction, and a window that conflicts with updates is read again.
//
// Threads: ctx's worker thread.
#ifndef FARM_KV_KEY_SCAN_PAGES_H_
#define FARM_KV_KEY_SCAN_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/store.h"

namespace farm::kv {

// A page's window, in the layout's units (home buckets, slot groups), at most.
inline constexpr uint32_t kMaxScanWindow = 256;

// What one page may read: its validation carries 32 bytes per object read in one message
// (65,504 bytes at most), and its copies of the values should stay small. A window over
// it is halved and read again at once (RetryScanPage); a window of one bucket or group
// reads what it holds, whatever that costs.
class ScanBudget {
 public:
  static constexpr size_t kMaxObjects = 1024;
  static constexpr uint64_t kMaxBytes = uint64_t{4} << 20;

  // Not enforced for a window of one.
  explicit ScanBudget(uint32_t window) : enforced_(window > 1) {}
  // Counts an object of `bytes` to read; false once the page is over the budget.
  bool Add(uint64_t bytes) {
    ++objects_;
    bytes_ += bytes;
    return !enforced_ || (objects_ <= kMaxObjects && bytes_ <= kMaxBytes);
  }

 private:
  bool enforced_;
  size_t objects_ = 0;
  uint64_t bytes_ = 0;
};

// The keys of out-of-line pairs: their value objects (kv/layout.h's format) read in `tx`,
// 64 KiB of them at a time (one round trip each), each key appended to `keys`. A value
// freed meanwhile is the conflict it is (Aborted, Retryable).
Task<absl::Status> AppendValueObjectKeys(Tx& tx, std::vector<FatPtr> values,
                                         std::vector<std::string>& keys);

// Commits `tx`, read-only: its validation checks every object read is still at the
// version read (Retryable's Aborted when not).
Task<absl::Status> ValidateScan(Tx& tx);

// One attempt at a page of `window` units: the page; nullopt when the window is over
// the page's ScanBudget; or an error (Aborted: it conflicted with updates).
using ScanAttempt = std::function<Task<absl::StatusOr<std::optional<KeyPage>>>(uint32_t window)>;

// attempt(window) until it answers a page or an error other than Aborted: a window over
// the budget is halved at once; after a conflict, the window is read again after a pause
// that grows with each conflict, halved (down to 1) every fourth. Unavailable after 40
// conflicts.
Task<absl::StatusOr<KeyPage>> RetryScanPage(Context& ctx, uint32_t window, ScanAttempt attempt);

// One window's page from `cursor` (a layout's RetryScanPage over its windows).
using WindowScan = std::function<Task<absl::StatusOr<KeyPage>>(uint64_t cursor, uint32_t window)>;

// A page of about `count` keys: windows from `cursor` on, each its own transaction, until
// the page holds `count` keys, the scan ends, or `max_units` units were read (Redis's
// dictScan reads at most 10 x count buckets a call; the last window may take a page past
// it). The first window is `window` units;
// each next one is sized by the keys a unit held so far (doubled while none did), at
// most kMaxScanWindow. Each window's keys keep its guarantees, so the page's do.
Task<absl::StatusOr<KeyPage>> ScanAbout(uint64_t cursor, uint32_t count, uint32_t window,
                                        uint64_t max_units, WindowScan scan_window);

}  // namespace farm::kv

#endif  // FARM_KV_KEY_SCAN_PAGES_H_
