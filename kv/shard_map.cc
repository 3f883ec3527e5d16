#include "kv/shard_map.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"

namespace farm::kv {
namespace {

constexpr uint32_t kDirectoryFormat = 1;
constexpr size_t kDirectoryHeaderBytes = 4 * 5;  // format, H, key, value, count
constexpr size_t kShardBytes = 8 + 4 * 4;        // first, incarnation, stride, buckets, owner

void Put32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void Put64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
uint32_t Get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

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
      const uint64_t raw = shards_[i].first.raw();
      std::memcpy(name, &raw, 8);
      std::memcpy(name + 8, &k, 4);
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
  Put32(out, kDirectoryFormat);
  Put32(out, layout.neighbourhood);
  Put32(out, layout.inline_key_bytes);
  Put32(out, layout.inline_value_bytes);
  Put32(out, static_cast<uint32_t>(shards.size()));
  for (const Shard& s : shards) {
    Put64(out, s.first.raw());
    Put32(out, s.incarnation);
    Put32(out, s.stride);
    Put32(out, s.buckets);
    Put32(out, s.owner);
  }
  return out;
}

absl::StatusOr<std::pair<TableLayout, std::vector<Shard>>> DecodeDirectory(absl::string_view bytes) {
  if (bytes.size() < kDirectoryHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("kv directory of %d bytes is too short", bytes.size()));
  }
  const char* p = bytes.data();
  if (Get32(p) != kDirectoryFormat) {
    return absl::InvalidArgumentError(absl::StrFormat("kv directory format %d (expected %d)", Get32(p),
                                                      kDirectoryFormat));
  }
  TableLayout layout{Get32(p + 4), Get32(p + 8), Get32(p + 12)};
  if (absl::Status s = layout.Validate(); !s.ok()) return s;
  const uint64_t count = Get32(p + 16);
  if (bytes.size() != kDirectoryHeaderBytes + count * kShardBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "kv directory of %d bytes does not hold its %d shards", bytes.size(), count));
  }
  std::vector<Shard> shards;
  shards.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const char* s = p + kDirectoryHeaderBytes + i * kShardBytes;
    shards.push_back(Shard{Addr::FromRaw(Get64(s)), Get32(s + 8), Get32(s + 12), Get32(s + 16),
                           static_cast<NodeId>(Get32(s + 20))});
  }
  return std::make_pair(layout, std::move(shards));
}

}  // namespace farm::kv
