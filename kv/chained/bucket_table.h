// BucketTable: where the buckets of one table of a partition are (one or more runs of
// adjacent objects), and its directory object's bytes (kv/chained/bucket_format.h).
// Immutable once built; shared by threads.
#ifndef FARM_KV_CHAINED_BUCKET_TABLE_H_
#define FARM_KV_CHAINED_BUCKET_TABLE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "kv/chained/bucket_format.h"

namespace farm::kv::chained {

class BucketTable {
 public:
  // InvalidArgument for no runs or a run of no buckets.
  static absl::StatusOr<BucketTable> Create(std::vector<BucketRun> runs, uint32_t bucket_bytes);
  // The table a directory object describes (InternalError for bytes that are not one).
  static absl::StatusOr<BucketTable> Decode(std::span<const char> directory, uint32_t bucket_bytes);

  uint64_t buckets() const { return buckets_; }
  const std::vector<BucketRun>& runs() const { return runs_; }
  // Bucket i (< buckets()).
  FatPtr Bucket(uint64_t i) const;
  // The directory object's bytes (DirectoryBytes(runs().size()) of them).
  void Encode(std::span<char> directory) const;

 private:
  BucketTable(std::vector<BucketRun> runs, uint32_t bucket_bytes);
  std::vector<BucketRun> runs_;
  std::vector<uint64_t> starts_;  // the index of each run's first bucket
  uint32_t bucket_bytes_ = 0;
  uint64_t buckets_ = 0;
};

// A key's bucket in a table of `buckets` buckets. Doubling splits bucket b of N into b
// and b + N of 2N (for any N): the rule migration relies on.
inline uint64_t BucketIndex(uint64_t hash, uint64_t buckets) { return static_cast<uint32_t>(hash) % buckets; }

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_BUCKET_TABLE_H_
