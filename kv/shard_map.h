// ShardMap: where a key's bucket is. The hashtable is sharded over the machines: each
// machine allocates shards (runs of adjacent buckets of one block) and publishes them;
// hash values map to shards by consistent hashing (points_per_shard points per shard
// on a 64-bit ring, placed by hashing the shard's address), so adding shards moves
// only the keys of the ring arcs they take over.
//
// Within a shard of n buckets a key's home bucket is one of the first n-1: the last
// bucket only serves as its predecessor's neighbour, so "the bucket and the next one"
// is always one READ of adjacent objects.
//
// Immutable once built; shared by every thread.
#ifndef FARM_KV_SHARD_MAP_H_
#define FARM_KV_SHARD_MAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/layout.h"
#include "kv/shard.h"
#include "kv/shard_catalog.h"

namespace farm::kv {

struct Home {
  uint32_t shard;
  uint32_t bucket;  // in [0, buckets - 1)
};

class ShardMap {
 public:
  static constexpr uint32_t kPointsPerShard = 64;

  // InvalidArgument for no shards, a shard of fewer than 2 buckets, or an invalid layout.
  static absl::StatusOr<ShardMap> Create(TableLayout layout, std::vector<Shard> shards);

  const TableLayout& layout() const { return layout_; }
  const std::vector<Shard>& shards() const { return shards_; }
  Home Locate(uint64_t hash) const;
  // The bucket a pair with this hash lives at home in, within `shard`.
  uint32_t BucketOf(uint64_t hash, const Shard& shard) const;
  FatPtr Bucket(uint32_t shard, uint32_t bucket) const;
  uint64_t total_buckets() const { return total_buckets_; }

 private:
  ShardMap(TableLayout layout, std::vector<Shard> shards);

  TableLayout layout_;
  std::vector<Shard> shards_;
  std::vector<std::pair<uint64_t, uint32_t>> ring_;  // (point, shard), sorted
  uint64_t total_buckets_ = 0;
};

// The layout as every machine's directory states it (kv/shard_catalog.h): format 1,
// then u32 H, u32 inline key bytes, u32 inline value bytes.
ShardFormat HopscotchFormat(const TableLayout& layout);

}  // namespace farm::kv

#endif  // FARM_KV_SHARD_MAP_H_
