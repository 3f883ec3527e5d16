#include "kv/key_scan_pages.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kv/layout.h"
#include "kv/tx_operation.h"

namespace farm::kv {
namespace {

constexpr int kAttemptsPerWindow = 4;
constexpr int kMaxScanAttempts = 40;
constexpr absl::Duration kConflictPause = absl::Microseconds(100);
// The bytes of value objects read together.
constexpr uint64_t kValueBatchBytes = 64 << 10;

}  // namespace

Task<absl::Status> AppendValueObjectKeys(Tx& tx, std::vector<FatPtr> values,
                                         std::vector<std::string>& keys) {
  // In batches of at most kValueBatchBytes (and one value at least): a READ must complete
  // within the reader's read bound, and many large ones issued together queue on the
  // fabric past it.
  for (size_t first = 0; first < values.size();) {
    std::vector<FatPtr> batch;
    uint64_t bytes = 0;
    for (;
         first < values.size() && (batch.empty() || bytes + values[first].size <= kValueBatchBytes);
         ++first) {
      bytes += values[first].size;
      batch.push_back(values[first]);
    }
    absl::StatusOr<std::vector<ObjBuf*>> objects = co_await TxReadAll(tx, std::move(batch));
    if (!objects.ok()) co_return Retryable(objects.status());
    for (ObjBuf* object : *objects) {
      absl::StatusOr<std::pair<absl::string_view, absl::string_view>> pair =
          ParseValueObject(object->data());
      if (!pair.ok()) co_return pair.status();
      keys.emplace_back(pair->first);
    }
  }
  co_return absl::OkStatus();
}

Task<absl::Status> ValidateScan(Tx& tx) { co_return Retryable(co_await TxCommit(tx)); }

Task<absl::StatusOr<KeyPage>> RetryScanPage(Context& ctx, uint32_t window, ScanAttempt attempt) {
  window = std::clamp<uint32_t>(window, 1, kMaxScanWindow);
  absl::Status conflict;
  for (int conflicts = 0; conflicts < kMaxScanAttempts;) {
    absl::StatusOr<std::optional<KeyPage>> page = co_await attempt(window);
    if (page.ok() && !page->has_value()) {
      window = std::max<uint32_t>(1, window / 2);  // over the budget (a window of 1 never is)
      continue;
    }
    if (page.ok()) co_return std::move(**page);
    if (page.status().code() != absl::StatusCode::kAborted) co_return page.status();
    conflict = page.status();
    ++conflicts;
    if (conflicts % kAttemptsPerWindow == 0) window = std::max<uint32_t>(1, window / 2);
    co_await SleepFor(ctx, kConflictPause * conflicts);
  }
  co_return absl::UnavailableError(absl::StrCat("a page of the key scan conflicted with updates ",
                                                kMaxScanAttempts, " times: ", conflict.message()));
}

Task<absl::StatusOr<KeyPage>> ScanAbout(uint64_t cursor, uint32_t count, uint32_t window,
                                        uint64_t max_units, WindowScan scan_window) {
  KeyPage page;
  page.cursor = cursor;
  uint64_t units = 0;
  do {
    absl::StatusOr<KeyPage> part = co_await scan_window(page.cursor, window);
    if (!part.ok()) co_return part.status();
    units += part->cursor == 0 ? window : part->cursor - page.cursor;
    page.cursor = part->cursor;
    for (std::string& key : part->keys) page.keys.push_back(std::move(key));
    const uint64_t wanted = count > page.keys.size() ? count - page.keys.size() : 0;
    const uint64_t next = page.keys.empty()
                              ? uint64_t{window} * 2
                              : (wanted * units + page.keys.size() - 1) / page.keys.size();
    window = static_cast<uint32_t>(std::clamp<uint64_t>(next, 1, kMaxScanWindow));
  } while (page.cursor != 0 && page.keys.size() < count && units < max_units);
  co_return page;
}

}  // namespace farm::kv
