// FakeCluster / FakeStore: an in-memory kv::Store for tests of the RESP service.
//
// A FakeCluster is the shared contents (one map, a mutex around it); each worker thread
// gets its own FakeStore on that thread's EventLoop. Every operation takes effect when
// its callback is due — on the loop's next iteration (Defer), or after a delay the test
// chooses per operation — never inside the call, as kv/store.h requires. With delays,
// operations issued together complete (and take effect) out of order, which is what
// tests of the session's ordering need.
//
// Deliberately strict: the store keeps the caller's key and value string_views and
// reads them only when the operation takes effect, so a caller that frees its
// arguments early is caught (under ASan).
//
// StoreTxn: optimistic. Reads record the version of each key (a missing key has a
// version too: deleting bumps it), writes are buffered; reads see the transaction's own
// writes; Commit checks every recorded version under the lock and applies all writes
// atomically, or returns Aborted and applies none.
#ifndef FARM_TESTS_KV_RESP_FAKE_STORE_H_
#define FARM_TESTS_KV_RESP_FAKE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/base/mutex.h"
#include "farm/event/event_loop.h"
#include "kv/store.h"

namespace farm::kv::testing {

class FakeCluster {
 public:
  explicit FakeCluster(StoreLimits limits = {.max_key_bytes = 1024, .max_value_bytes = 1 << 20})
      : limits_(limits) {}

  StoreLimits limits() const { return limits_; }

  // --- Test hooks (any thread) ---
  // The next `count` operations (of any store or transaction, commits included) fail
  // with `status`.
  void InjectError(absl::Status status, int count = 1);
  // The next `count` transaction commits fail with `status` (nothing is applied).
  void InjectCommitError(absl::Status status, int count = 1);
  std::optional<std::string> Peek(const std::string& key) const;
  void Poke(const std::string& key, const std::string& value);
  uint64_t operations() const;
  StoreStats Stats() const;
  // A page of Store::ScanKeys: keys hash to kScanBuckets "home buckets" (a stable hash),
  // and a page is a window of (count + 1) / 2 of them, as the hopscotch table's but
  // without its cap of 256 (a large COUNT reads the whole store in one page, as Redis
  // does for a small keyspace: the differential tests compare such pages).
  static constexpr uint64_t kScanBuckets = 1024;
  KeyPage ScanKeys(uint64_t cursor, uint32_t count) const;

  // --- For FakeStore and its transactions ---
  struct Versioned {
    std::optional<std::string> value;
    uint64_t version = 0;
  };
  // The injected error, if one is due (consumes it).
  absl::Status TakeInjected();
  absl::Status TakeInjectedCommit();
  absl::Status CheckSizes(absl::string_view key, const absl::string_view* value) const;
  Versioned Read(const std::string& key) const;
  void Write(const std::string& key, std::optional<std::string> value);
  // true when the key existed (atomically).
  bool Remove(const std::string& key);
  // Increment under the lock; the new value.
  absl::StatusOr<int64_t> Increment(const std::string& key, int64_t delta);
  // Applies `writes` if every key in `reads` still has its recorded version.
  absl::Status CommitIf(const absl::flat_hash_map<std::string, uint64_t>& reads,
                        const absl::flat_hash_map<std::string, std::optional<std::string>>& writes);

 private:
  void WriteLocked(const std::string& key, std::optional<std::string> value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StoreLimits limits_;
  mutable Mutex mu_;
  // A removed key stays as a tombstone (value nullopt) so that its version survives.
  absl::flat_hash_map<std::string, Versioned> map_ ABSL_GUARDED_BY(mu_);
  uint64_t next_version_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t keys_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t pair_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t operations_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status injected_ ABSL_GUARDED_BY(mu_);
  int injected_count_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status injected_commit_ ABSL_GUARDED_BY(mu_);
  int injected_commit_count_ ABSL_GUARDED_BY(mu_) = 0;
};

// Parses a stored value as Redis does for INCR (strict 64-bit decimal).
absl::StatusOr<int64_t> ParseStoredInteger(const std::optional<std::string>& value);

struct FakeStoreOptions {
  // How long an operation takes ("get", "multiget", "put", "remove", "increment",
  // "stats", "scan", "txn_get", "txn_put", "txn_remove", "txn_increment", "commit"); zero or
  // unset: the loop's next iteration.
  std::function<absl::Duration(absl::string_view op, absl::string_view key)> delay;
};

class FakeStore : public Store {
 public:
  // `loop` is the owning worker thread's loop; `cluster` outlives the store.
  FakeStore(FakeCluster* cluster, EventLoop* loop, FakeStoreOptions options = {})
      : cluster_(cluster), loop_(loop), options_(std::move(options)) {}

  StoreLimits limits() const override { return cluster_->limits(); }
  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override;
  void MultiGet(absl::Span<const std::string> keys,
                Done<absl::StatusOr<std::vector<std::optional<std::string>>>> done) override;
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override;
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override;
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override;
  void Stats(Done<absl::StatusOr<StoreStats>> done) override;
  void ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;

  FakeCluster* cluster() const { return cluster_; }
  // Runs `work` when operation `op` on `key` is due (loop thread).
  void Schedule(absl::string_view op, absl::string_view key, absl::AnyInvocable<void()> work);
  // Operations scheduled whose callbacks have not run yet.
  int pending() const { return *pending_; }

 private:
  FakeCluster* const cluster_;
  EventLoop* const loop_;
  const FakeStoreOptions options_;
  // Shared with scheduled work, which may outlive the store (it never touches `this`).
  std::shared_ptr<int> pending_ = std::make_shared<int>(0);
};

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_RESP_FAKE_STORE_H_
