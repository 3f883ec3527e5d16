// TableReader: one worker thread's lock-free lookups in the hashtable (paper section
// 3.6): one READ of the key's bucket and the next, then lock-free reads along the
// bucket's overflow chain and of out-of-line values, if needed.
//
// A lookup restarts from the buckets when the two bucket copies' joint versions differ
// (a transaction moved pairs between them), or when a block or value object it followed
// a pointer to was freed or has another incarnation (a remove collapsed the chain, or
// the value was replaced). Each lookup is linearizable.
//
// Multi-get issues every key's first READ before any completes, so a batch costs about
// one round trip (plus chain and value reads for the few keys that need them).
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// reader and the ShardMap must outlive the lookups in flight. Lookup states are pooled
// (the key is copied into a reused buffer); lockFreeReadMany's continuation wrapper
// still allocates once per READ.
#ifndef FARM_KV_TABLE_READER_H_
#define FARM_KV_TABLE_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/farm.h"
#include "kv/kv_client.h"
#include "kv/lookup_pool.h"
#include "kv/shard_map.h"

namespace farm::kv {

class TableReader {
 public:
  // The value (nullopt: no such key) is valid during the continuation only.
  using GetDone = kv::GetDone;
  using MultiGetDone = kv::MultiGetDone;

  // A lookup gives up after this many restarts (DeadlineExceeded).
  static constexpr uint32_t kMaxRestarts = 64;

  TableReader(Context& ctx, std::shared_ptr<const ShardMap> map);
  ~TableReader();
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  // Test seam: when set, a lookup calls it before reading each overflow block
  // (`blocks_read` of its chain so far: 0 right after the bucket READ) and goes on when
  // `resume` runs, on this thread. Lets a test complete a concurrent update exactly
  // there. Unset in production: one branch per block read.
  using BeforeBlockHook =
      absl::AnyInvocable<void(absl::string_view key, size_t blocks_read, absl::AnyInvocable<void()> resume)>;
  void SetBeforeBlockHookForTest(BeforeBlockHook hook) { before_block_ = std::move(hook); }

  void Get(absl::string_view key, GetDone done);
  // One result per key, in order; fails as a whole with the first lookup's error.
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done);

  const LookupStats& stats() const { return stats_; }
  const ShardMap& map() const { return *map_; }

 private:
  struct Lookup;

  void ReadBuckets(Lookup* l);
  void OnBuckets(Lookup* l, absl::StatusOr<std::span<const LockFreeObject>> r);
  // Scans a bucket's or block's slots: delivers an inline match, else queues the
  // out-of-line candidates.
  bool Scan(Lookup* l, std::span<const char> object, bool bucket);
  void Continue(Lookup* l);
  void OnValue(Lookup* l, absl::StatusOr<LockFreeObject> r);
  void ReadBlock(Lookup* l);
  void OnBlock(Lookup* l, absl::StatusOr<LockFreeObject> r);
  void Restart(Lookup* l, absl::string_view why);

  Context& ctx_;
  const std::shared_ptr<const ShardMap> map_;
  LookupPool<Lookup> pool_;
  LookupStats stats_;
  BeforeBlockHook before_block_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_READER_H_
