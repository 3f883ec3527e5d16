#include "kv/linear/linear_table.h"

#include <algorithm>

#include "farm/api/farm.h"

namespace farm::kv::linear {

std::shared_ptr<const LinearTable> MakeLinearTable(std::shared_ptr<const ProbeMap> map,
                                                   const ReadSizeOptions& options) {
  auto table = std::make_shared<LinearTable>();
  const uint32_t g = map->slots_per_group();
  // A group's stored bytes: its stride where shards have more than one group, else the
  // stored size rounded to the allocator's alignment.
  uint64_t stored = 0;
  for (const Shard& s : map->shards()) stored = std::max<uint64_t>(stored, s.buckets > 1 ? s.stride : 0);
  if (stored == 0) stored = (objStoredBytes(map->layout().group_bytes()) + 15) / 16 * 16;
  table->slot_wire_bytes = double(stored) / g;
  const uint64_t max_r = std::min<uint64_t>(map->max_probe(), uint64_t{8} * kMaxGroupsPerRead * g);
  table->read_sizes = ReadSizeTable::Build(map->slots(), table->slot_wire_bytes, static_cast<uint32_t>(max_r), options);
  table->map = std::move(map);
  return table;
}

}  // namespace farm::kv::linear
