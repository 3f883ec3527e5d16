// PartitionMap: the chained table's partitions on every machine, the same on all of
// them (built from the catalog's shards, kv/shard_catalog.h). Each catalog shard (a
// run of n >= 2 equal objects on one machine) is one partition, expanded on its own:
// object 0 is the partition's root (kv/chained/bucket_format.h), objects 1..n-1 its
// initial table. A key's partition is chosen by the high half of its hash, in
// proportion to the partitions' initial sizes (the catalog's runs can be of very
// different lengths, down to 2 objects: an equal share of the keys would make a tiny
// partition expand from almost nothing under a burst of inserts, with every insert on
// its few hot buckets), its bucket by the low half (BucketIndex). Every table a partition ever has is allocated on the
// root's machine (next to the root), so a shipped update is a single-machine
// transaction there.
//
// TableCache: the tables of expansions by their directory object (immutable, named by
// a fat pointer: a freed and reused directory has another incarnation), shared by a
// machine's threads.
#ifndef FARM_KV_CHAINED_PARTITION_MAP_H_
#define FARM_KV_CHAINED_PARTITION_MAP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/sync.h"
#include "kv/chained/bucket_format.h"
#include "kv/chained/bucket_table.h"
#include "kv/shard_catalog.h"

namespace farm::kv::chained {

struct Partition {
  FatPtr root;
  std::shared_ptr<const BucketTable> initial;
  NodeId owner = 0;
};

class PartitionMap {
 public:
  static absl::StatusOr<PartitionMap> Create(const BucketLayout& layout, const ShardList& shards);

  const BucketLayout& layout() const { return layout_; }
  size_t size() const { return partitions_.size(); }
  const Partition& partition(size_t p) const { return partitions_[p]; }
  uint32_t PartitionOf(uint64_t hash) const;

 private:
  PartitionMap(BucketLayout layout, std::vector<Partition> partitions);
  BucketLayout layout_;
  std::vector<Partition> partitions_;
  std::vector<uint64_t> starts_;  // the sum of the initial buckets of the partitions before each
  uint64_t initial_buckets_ = 0;
};

class TableCache {
 public:
  explicit TableCache(uint32_t bucket_bytes) : bucket_bytes_(bucket_bytes) {}

  // The table of `directory`, if cached.
  std::shared_ptr<const BucketTable> Find(FatPtr directory) const;
  // Decodes and caches the directory object's bytes (InternalError for bad bytes).
  absl::StatusOr<std::shared_ptr<const BucketTable>> Add(FatPtr directory, std::span<const char> bytes);

 private:
  struct Key {
    uint64_t addr;
    uint32_t incarnation;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.addr, k.incarnation);
    }
  };
  const uint32_t bucket_bytes_;
  mutable Mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<const BucketTable>> tables_ ABSL_GUARDED_BY(mu_);
};

// What a machine shares of an opened chained table.
struct ChainedTable {
  std::shared_ptr<const PartitionMap> map;
  std::shared_ptr<TableCache> tables;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_PARTITION_MAP_H_
