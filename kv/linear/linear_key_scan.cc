#include "kv/linear/linear_key_scan.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kv/key_scan_pages.h"
#include "kv/layout.h"
#include "kv/linear/slot_format.h"
#include "kv/tx_operation.h"

namespace farm::kv::linear {
namespace {

// The page of groups [first, end) of the table; nullopt over the page's budget.
Task<absl::StatusOr<std::optional<KeyPage>>> ReadPage(Context& ctx,
                                                      std::shared_ptr<const ProbeMap> map,
                                                      uint64_t first, uint64_t end) {
  const SlotLayout& layout = map->layout();
  const uint32_t g = layout.slots_per_group;
  ScanBudget budget(static_cast<uint32_t>(end - first));
  TxHandle tx = txCreate(ctx);
  std::vector<FatPtr> groups;
  for (uint64_t i = first; i < end; ++i) {
    groups.push_back(map->Group(map->GroupOf(i * g)));
    budget.Add(layout.group_bytes());  // a window of 256 groups is within it
  }
  absl::StatusOr<std::vector<ObjBuf*>> read = co_await TxReadAll(*tx, std::move(groups));
  if (!read.ok()) co_return Retryable(read.status());
  KeyPage page;
  std::vector<FatPtr> values;
  for (ObjBuf* object : *read) {
    std::span<const char> group = object->data();
    if (group[0] == 0) continue;  // never written: every slot empty
    if (absl::Status s = CheckGroup(group, layout); !s.ok()) co_return s;
    for (uint32_t i = 0; i < g; ++i) {
      std::span<const char> slot = GroupSlot(group, layout, i);
      if (absl::Status s = CheckLinearSlot(slot, layout); !s.ok()) co_return s;
      switch (KindOfSlot(slot)) {
        case Kind::kInline:
          page.keys.emplace_back(InlineKey(slot));
          break;
        case Kind::kOutOfLine:
          values.push_back(OutOfLineValue(slot));
          break;
        case Kind::kEmpty:
        case Kind::kTombstone:
          break;
      }
    }
  }
  for (const FatPtr& value : values) {
    if (!budget.Add(value.size)) co_return std::nullopt;
  }
  if (absl::Status s = co_await AppendValueObjectKeys(*tx, std::move(values), page.keys); !s.ok()) {
    co_return s;
  }
  if (absl::Status s = co_await ValidateScan(*tx); !s.ok()) co_return s;
  page.cursor = end * g >= map->slots() ? 0 : end;
  co_return std::optional<KeyPage>(std::move(page));
}

}  // namespace

Task<absl::StatusOr<KeyPage>> ScanKeyPage(Context& ctx, std::shared_ptr<const ProbeMap> map,
                                          uint64_t cursor, uint32_t count) {
  const uint64_t groups = map->slots() / map->slots_per_group();
  if (cursor >= groups) co_return KeyPage{};
  const uint64_t g = map->slots_per_group();
  const uint64_t window = std::min<uint64_t>((2 * uint64_t{count} + g - 1) / g, kMaxScanWindow);
  // Named std::functions: GCC 12 destroys twice a lambda converted in the co_await's
  // argument list (farm/api/coro.h).
  WindowScan scan_window = [&ctx, map, groups](uint64_t from,
                                               uint32_t w) -> Task<absl::StatusOr<KeyPage>> {
    ScanAttempt attempt = [&ctx, map, from, groups](uint32_t n) {
      return ReadPage(ctx, map, from, std::min<uint64_t>(groups, from + n));
    };
    return RetryScanPage(ctx, w, std::move(attempt));
  };
  co_return co_await ScanAbout(cursor, count, static_cast<uint32_t>(window),
                               (10 * uint64_t{count} + g - 1) / g, std::move(scan_window));
}

}  // namespace farm::kv::linear
