#include "kv/chained/bucket_table.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"

namespace farm::kv::chained {

BucketTable::BucketTable(std::vector<BucketRun> runs, uint32_t bucket_bytes)
    : runs_(std::move(runs)), bucket_bytes_(bucket_bytes) {
  starts_.reserve(runs_.size());
  for (const BucketRun& r : runs_) {
    starts_.push_back(buckets_);
    buckets_ += r.count;
  }
}

absl::StatusOr<BucketTable> BucketTable::Create(std::vector<BucketRun> runs, uint32_t bucket_bytes) {
  if (runs.empty()) return absl::InvalidArgumentError("chained: a table of no runs");
  for (const BucketRun& r : runs) {
    if (r.count == 0 || r.first.is_null()) return absl::InvalidArgumentError("chained: an empty run");
    if (r.count > 1 && r.stride < bucket_bytes) return absl::InvalidArgumentError("chained: overlapping buckets");
  }
  return BucketTable(std::move(runs), bucket_bytes);
}

absl::StatusOr<BucketTable> BucketTable::Decode(std::span<const char> d, uint32_t bucket_bytes) {
  if (d.size() < 16) return absl::InternalError("chained: directory too short");
  uint64_t buckets = 0;
  uint32_t count = 0;
  std::memcpy(&buckets, d.data(), 8);
  std::memcpy(&count, d.data() + 8, 4);
  if (d.size() < DirectoryBytes(count)) return absl::InternalError("chained: directory truncated");
  std::vector<BucketRun> runs(count);
  for (uint32_t i = 0; i < count; ++i) {
    const char* p = d.data() + 16 + i * 24;
    uint64_t first = 0;
    std::memcpy(&first, p, 8);
    runs[i].first = Addr::FromRaw(first);
    std::memcpy(&runs[i].incarnation, p + 8, 4);
    std::memcpy(&runs[i].stride, p + 12, 4);
    std::memcpy(&runs[i].count, p + 16, 4);
  }
  absl::StatusOr<BucketTable> t = Create(std::move(runs), bucket_bytes);
  if (!t.ok()) return absl::InternalError(t.status().message());
  if (t->buckets() != buckets) {
    return absl::InternalError(absl::StrFormat("chained: directory says %d buckets, runs hold %d", buckets,
                                               t->buckets()));
  }
  return t;
}

FatPtr BucketTable::Bucket(uint64_t i) const {
  const size_t r = std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin() - 1;
  const BucketRun& run = runs_[r];
  const uint64_t within = i - starts_[r];
  return FatPtr{Addr(run.first.region(), static_cast<uint32_t>(run.first.offset() + within * run.stride)),
                bucket_bytes_, run.incarnation};
}

void BucketTable::Encode(std::span<char> d) const {
  std::memset(d.data(), 0, DirectoryBytes(runs_.size()));
  const uint32_t count = static_cast<uint32_t>(runs_.size());
  std::memcpy(d.data(), &buckets_, 8);
  std::memcpy(d.data() + 8, &count, 4);
  for (uint32_t i = 0; i < count; ++i) {
    char* p = d.data() + 16 + i * 24;
    const uint64_t first = runs_[i].first.raw();
    std::memcpy(p, &first, 8);
    std::memcpy(p + 8, &runs_[i].incarnation, 4);
    std::memcpy(p + 12, &runs_[i].stride, 4);
    std::memcpy(p + 16, &runs_[i].count, 4);
  }
}

}  // namespace farm::kv::chained
