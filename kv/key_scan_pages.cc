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

}  // namespace

Task<absl::Status> AppendValueObjectKeys(Tx& tx, std::vector<FatPtr> values,
                                         std::vector<std::string>& keys) {
  absl::StatusOr<std::vector<ObjBuf*>> objects = co_await TxReadAll(tx, std::move(values));
  if (!objects.ok()) co_return Retryable(objects.status());
  for (ObjBuf* object : *objects) {
    absl::StatusOr<std::pair<absl::string_view, absl::string_view>> pair =
        ParseValueObject(object->data());
    if (!pair.ok()) co_return pair.status();
    keys.emplace_back(pair->first);
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

}  // namespace farm::kv
