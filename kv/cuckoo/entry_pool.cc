#include "kv/cuckoo/entry_pool.h"

#include <algorithm>

#include "farm/api/wire.h"

namespace farm::kv::cuckoo {

EntryPool::EntryPool(const CuckooMap& map, const std::vector<SliceRef>& slices) : map_(map) {
  for (const SliceRef& s : slices) {
    if (s.table < 0 || static_cast<size_t>(s.table) >= map.nodes().size()) continue;
    const NodeTables& node = map.nodes()[s.table];
    if (s.slice >= node.slices()) continue;
    for (uint32_t c = 0; c < kSizeClasses; ++c) {
      Owned o;
      o.table = static_cast<uint32_t>(s.table);
      o.count = node.data[c].per_thread;
      o.first = s.slice * o.count;
      o.version.assign(o.count, 0);
      o.is_free.assign(o.count, 1);
      o.free.reserve(o.count);
      for (uint32_t i = o.count; i > 0; --i) o.free.push_back(i - 1);  // lowest first
      owned_[c].push_back(std::move(o));
    }
  }
}

std::optional<EntryRef> EntryPool::Take(uint32_t size_class) {
  for (Owned& o : owned_[size_class]) {
    if (o.free.empty()) continue;
    const uint32_t i = o.free.back();
    o.free.pop_back();
    o.is_free[i] = 0;
    uint32_t& v = o.version[i];
    v = v % kVersionMask + 1;  // 1 .. kVersionMask, never 0 (entry_format.h invariant 1)
    return EntryRef{o.table, size_class, o.first + i, v};
  }
  return std::nullopt;
}

EntryPool::Owned* EntryPool::Find(const EntryRef& ref) {
  for (Owned& o : owned_[ref.size_class]) {
    if (o.table == ref.table && ref.entry >= o.first && ref.entry - o.first < o.count) return &o;
  }
  return nullptr;
}

void EntryPool::Free(const EntryRef& ref) {
  Owned* o = Find(ref);
  if (o == nullptr) return;
  const uint32_t i = ref.entry - o->first;
  if (o->is_free[i] || o->version[i] != ref.version) return;
  o->is_free[i] = 1;
  o->free.push_back(i);
}

Task<absl::StatusOr<uint32_t>> EntryPool::Reclaim(Context& ctx, uint32_t size_class) {
  uint32_t freed = 0;
  const uint32_t bytes = kClassBytes[size_class];
  for (Owned& o : owned_[size_class]) {
    uint32_t i = 0;
    while (i < o.count) {
      // One READ per object: the owned entries it holds.
      const RawLocation at = map_.Entry(EntryRef{o.table, size_class, o.first + i, 0});
      const uint32_t in_object = std::min(o.count - i, (at.object.size - at.offset) / bytes);
      absl::StatusOr<RawCopy> copy = co_await RawRead(ctx, at.object, at.offset, in_object * bytes);
      if (!copy.ok()) co_return copy.status();
      // Entries taken while the READ was out have a new version: their old marks no
      // longer match.
      for (uint32_t k = 0; k < in_object; ++k, ++i) {
        if (o.is_free[i]) continue;
        const uint64_t state = LoadLe<uint64_t>(copy->data.data() + size_t{k} * bytes);
        if (StateFlags(state) == kRecycled && StateVersion(state) == o.version[i]) {
          o.is_free[i] = 1;
          o.free.push_back(i);
          ++freed;
        }
      }
    }
  }
  co_return freed;
}

}  // namespace farm::kv::cuckoo
