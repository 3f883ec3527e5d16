#include "kv/chained/partition_map.h"

#include <algorithm>
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
  PartitionMap map(layout, std::move(partitions));
  if (map.initial_buckets_ >= (uint64_t{1} << 32)) return absl::InvalidArgumentError("chained: 2^32 initial buckets or more");
  return map;
}

PartitionMap::PartitionMap(BucketLayout layout, std::vector<Partition> partitions)
    : layout_(layout), partitions_(std::move(partitions)) {
  starts_.reserve(partitions_.size());
  for (const Partition& p : partitions_) {
    starts_.push_back(initial_buckets_);
    initial_buckets_ += p.initial->buckets();
  }
}

uint32_t PartitionMap::PartitionOf(uint64_t hash) const {
  const uint64_t x = ((hash >> 32) * initial_buckets_) >> 32;  // < initial_buckets_ (< 2^32)
  return static_cast<uint32_t>(std::upper_bound(starts_.begin(), starts_.end(), x) - starts_.begin() - 1);
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
