#include "kv/shard_map.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "farm/api/wire.h"

namespace farm::kv {
namespace {

constexpr uint32_t kDirectoryFormat = 1;
constexpr size_t kDirectoryHeaderBytes = 4 * 5;  // format, H, key, value, count
constexpr size_t kShardBytes = 8 + 4 * 4;        // first, incarnation, stride, buckets, owner


}  // namespace

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

std::string EncodeDirectory(const TableLayout& layout, const std::vector<Shard>& shards) {
  std::string out;
  out.reserve(kDirectoryHeaderBytes + shards.size() * kShardBytes);
  WireWriter w(&out);
  w.Put<uint32_t>(kDirectoryFormat);
  w.Put<uint32_t>(layout.neighbourhood);
  w.Put<uint32_t>(layout.inline_key_bytes);
  w.Put<uint32_t>(layout.inline_value_bytes);
  w.Put<uint32_t>(static_cast<uint32_t>(shards.size()));
  for (const Shard& s : shards) {
    w.Put<uint64_t>(s.first.raw());
    w.Put<uint32_t>(s.incarnation);
    w.Put<uint32_t>(s.stride);
    w.Put<uint32_t>(s.buckets);
    w.Put<uint32_t>(s.owner);
  }
  return out;
}

absl::StatusOr<std::pair<TableLayout, std::vector<Shard>>> DecodeDirectory(absl::string_view bytes) {
  if (bytes.size() < kDirectoryHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("kv directory of %d bytes is too short", bytes.size()));
  }
  const char* p = bytes.data();
  if (LoadLe<uint32_t>(p) != kDirectoryFormat) {
    return absl::InvalidArgumentError(absl::StrFormat("kv directory format %d (expected %d)", LoadLe<uint32_t>(p),
                                                      kDirectoryFormat));
  }
  TableLayout layout{LoadLe<uint32_t>(p + 4), LoadLe<uint32_t>(p + 8), LoadLe<uint32_t>(p + 12)};
  if (absl::Status s = layout.Validate(); !s.ok()) return s;
  const uint64_t count = LoadLe<uint32_t>(p + 16);
  if (bytes.size() != kDirectoryHeaderBytes + count * kShardBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "kv directory of %d bytes does not hold its %d shards", bytes.size(), count));
  }
  std::vector<Shard> shards;
  shards.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const char* s = p + kDirectoryHeaderBytes + i * kShardBytes;
    shards.push_back(Shard{Addr::FromRaw(LoadLe<uint64_t>(s)), LoadLe<uint32_t>(s + 8), LoadLe<uint32_t>(s + 12), LoadLe<uint32_t>(s + 16),
                           static_cast<NodeId>(LoadLe<uint32_t>(s + 20))});
  }
  return std::make_pair(layout, std::move(shards));
}

}  // namespace farm::kv
