#include "kv/shard_map.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "farm/api/wire.h"

namespace farm::kv {

absl::StatusOr<ShardMap> ShardMap::Create(TableLayout layout, std::vector<Shard> shards) {
  if (absl::Status s = layout.Validate(); !s.ok()) return s;
  if (shards.empty()) return absl::InvalidArgumentError("a table needs at least one shard");
  for (const Shard& s : shards) {
    if (s.buckets < 2 || s.first.is_null() || s.stride < layout.bucket_bytes()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "shard at %s: %d buckets of stride %d (needs >= 2 of >= %d bytes)", s.first.ToString(),
          s.buckets, s.stride, layout.bucket_bytes()));
    }
  }
  // The same set of shards gives the same ring whatever order they were published in.
  std::sort(shards.begin(), shards.end(),
            [](const Shard& a, const Shard& b) { return a.first.raw() < b.first.raw(); });
  return ShardMap(layout, std::move(shards));
}

ShardMap::ShardMap(TableLayout layout, std::vector<Shard> shards)
    : layout_(layout), shards_(std::move(shards)) {
  ring_.reserve(shards_.size() * kPointsPerShard);
  for (uint32_t i = 0; i < shards_.size(); ++i) {
    total_buckets_ += shards_[i].buckets - 1;
    for (uint32_t k = 0; k < kPointsPerShard; ++k) {
      char name[12];
      StoreLe<uint64_t>(name, shards_[i].first.raw());
      StoreLe<uint32_t>(name + 8, k);
      ring_.emplace_back(HashKey(absl::string_view(name, sizeof(name))), i);
    }
  }
  std::sort(ring_.begin(), ring_.end());
}

Home ShardMap::Locate(uint64_t hash) const {
  auto it = std::lower_bound(ring_.begin(), ring_.end(), std::make_pair(hash, uint32_t{0}));
  if (it == ring_.end()) it = ring_.begin();
  const uint32_t shard = it->second;
  return Home{shard, BucketOf(hash, shards_[shard])};
}

uint32_t ShardMap::BucketOf(uint64_t hash, const Shard& shard) const {
  // The ring used the hash's order; the bucket uses its bits remixed.
  const uint64_t mixed = (hash ^ (hash >> 29)) * 0xbf58476d1ce4e5b9ull;
  return static_cast<uint32_t>((mixed >> 32) % (shard.buckets - 1));
}

FatPtr ShardMap::Bucket(uint32_t shard, uint32_t bucket) const {
  const Shard& s = shards_[shard];
  return FatPtr{Addr(s.first.region(), s.first.offset() + bucket * s.stride), layout_.bucket_bytes(),
                s.incarnation};
}

ShardFormat HopscotchFormat(const TableLayout& layout) {
  return MakeShardFormat(kHopscotchDirectoryFormat,
                         {layout.neighbourhood, layout.inline_key_bytes, layout.inline_value_bytes});
}

}  // namespace farm::kv
