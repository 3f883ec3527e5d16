#include "kv/cuckoo/entry_pool.h"

#include <algorithm>

#include "farm/api/wire.h"

namespace farm::kv::cuckoo {

EntryPool::EntryPool(const CuckooMap& map, int table, size_t slice) : map_(map), table_(table) {
  if (table < 0) return;
  const NodeTables& node = map.nodes()[table];
  if (slice >= node.slices()) return;
  for (uint32_t c = 0; c < kSizeClasses; ++c) {
    count_[c] = node.data[c].per_thread;
    first_[c] = static_cast<uint32_t>(slice) * count_[c];
    version_[c].assign(count_[c], 0);
    is_free_[c].assign(count_[c], 1);
    free_[c].reserve(count_[c]);
    for (uint32_t i = count_[c]; i > 0; --i) free_[c].push_back(i - 1);  // lowest first
  }
}

std::optional<EntryRef> EntryPool::Take(uint32_t size_class) {
  std::vector<uint32_t>& free = free_[size_class];
  if (free.empty()) return std::nullopt;
  const uint32_t i = free.back();
  free.pop_back();
  is_free_[size_class][i] = 0;
  uint32_t& v = version_[size_class][i];
  v = v % kVersionMask + 1;  // 1 .. kVersionMask, never 0 (invariant 1)
  return EntryRef{static_cast<uint32_t>(table_), size_class, first_[size_class] + i, v};
}

bool EntryPool::Owns(const EntryRef& ref) const {
  return table_ >= 0 && ref.table == static_cast<uint32_t>(table_) && ref.entry >= first_[ref.size_class] &&
         ref.entry - first_[ref.size_class] < count_[ref.size_class];
}

void EntryPool::Free(const EntryRef& ref) {
  if (!Owns(ref)) return;
  const uint32_t i = ref.entry - first_[ref.size_class];
  if (is_free_[ref.size_class][i] || version_[ref.size_class][i] != ref.version) return;
  is_free_[ref.size_class][i] = 1;
  free_[ref.size_class].push_back(i);
}

Task<absl::StatusOr<uint32_t>> EntryPool::Reclaim(Context& ctx, uint32_t size_class) {
  uint32_t freed = 0;
  const uint32_t bytes = kClassBytes[size_class];
  uint32_t i = 0;
  while (i < count_[size_class]) {
    // One READ per object: the owned entries it holds.
    const RawLocation at = map_.Entry(EntryRef{static_cast<uint32_t>(table_), size_class, first_[size_class] + i, 0});
    const uint32_t in_object =
        std::min(count_[size_class] - i, (at.object.size - at.offset) / bytes);
    absl::StatusOr<RawCopy> copy = co_await RawRead(ctx, at.object, at.offset, in_object * bytes);
    if (!copy.ok()) co_return copy.status();
    for (uint32_t k = 0; k < in_object; ++k, ++i) {
      if (is_free_[size_class][i]) continue;
      const uint64_t state = LoadLe<uint64_t>(copy->data.data() + size_t{k} * bytes);
      if (StateFlags(state) == kRecycled && StateVersion(state) == version_[size_class][i]) {
        is_free_[size_class][i] = 1;
        free_[size_class].push_back(i);
        ++freed;
      }
    }
  }
  co_return freed;
}

}  // namespace farm::kv::cuckoo
