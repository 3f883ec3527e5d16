#include "kv/chained/partition_map.h"

#include <utility>

namespace farm::kv::chained {

absl::StatusOr<PartitionMap> PartitionMap::Create(const BucketLayout& layout, const ShardList& shards) {
  if (shards.empty()) return absl::FailedPreconditionError("chained: a table of no shards");
  std::vector<Partition> partitions;
  partitions.reserve(shards.size());
  const uint32_t bytes = layout.bucket_bytes();
  for (const Shard& s : shards) {
    if (s.buckets < 2) return absl::InternalError("chained: a shard of fewer than 2 objects");
    BucketRun run{Addr(s.first.region(), s.first.offset() + s.stride), s.incarnation, s.stride, s.buckets - 1};
    absl::StatusOr<BucketTable> initial = BucketTable::Create({run}, bytes);
    if (!initial.ok()) return initial.status();
    partitions.push_back(Partition{FatPtr{s.first, bytes, s.incarnation},
                                   std::make_shared<const BucketTable>(std::move(*initial)), s.owner});
  }
  return PartitionMap(layout, std::move(partitions));
}

std::shared_ptr<const BucketTable> TableCache::Find(FatPtr directory) const {
  MutexLock lock(&mu_);
  auto it = tables_.find(Key{directory.addr.raw(), directory.incarnation});
  return it == tables_.end() ? nullptr : it->second;
}

absl::StatusOr<std::shared_ptr<const BucketTable>> TableCache::Add(FatPtr directory, std::span<const char> bytes) {
  absl::StatusOr<BucketTable> table = BucketTable::Decode(bytes, bucket_bytes_);
  if (!table.ok()) return table.status();
  auto shared = std::make_shared<const BucketTable>(std::move(*table));
  MutexLock lock(&mu_);
  auto [it, added] = tables_.try_emplace(Key{directory.addr.raw(), directory.incarnation}, shared);
  return it->second;
}

}  // namespace farm::kv::chained
