// Store: what the key-value services (kv/resp) need from a key-value store, one
// instance per worker thread.
//
// Implemented by kv::TableStore (the FaRM hashtable, kv/table_store.h) and by test
// fakes. Keys and values are byte strings (any bytes, empty allowed) within limits().
//
// Contract:
//   - Every call is made on the worker thread that owns the Store, and its continuation
//     runs later on that thread, never inside the call.
//   - Each single-key operation is linearizable. MultiGet is a batch of independent
//     linearizable lookups (not a snapshot). Transactions are strictly serializable.
//   - Errors (absl::Status): InvalidArgument — a key or value over limits(), or INCR of
//     a value that is not a 64-bit decimal integer, or an increment that overflows;
//     Aborted — a transaction conflicted (only from StoreTxn::Commit); Unavailable /
//     DeadlineExceeded — a machine did not answer; ResourceExhausted — the store is full.
#ifndef FARM_KV_STORE_H_
#define FARM_KV_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace farm::kv {

template <typename T>
using Done = absl::AnyInvocable<void(T)>;

struct StoreLimits {
  uint64_t max_key_bytes = 0;
  uint64_t max_value_bytes = 0;
};

// Figures for INFO and DBSIZE.
struct StoreStats {
  uint64_t keys = 0;           // key-value pairs stored
  uint64_t pair_bytes = 0;     // bytes of keys and values
  uint64_t memory_bytes = 0;   // bytes of FaRM memory the store occupies
  uint64_t slots = 0;          // pair slots in buckets (occupancy = keys in buckets / slots)
  uint64_t overflow_blocks = 0;
};

// One page of a scan of the keys (Store::ScanKeys, Redis SCAN).
struct KeyPage {
  std::vector<std::string> keys;
  uint64_t cursor = 0;  // where the next page begins; 0: the scan is complete
};

// A transaction over several keys (Redis MULTI/EXEC and WATCH). Reads see the
// transaction's own earlier writes. Nothing is visible to others before Commit; Commit
// either applies every write or none. Destroying it uncommitted aborts it.
class StoreTxn {
 public:
  virtual ~StoreTxn() = default;
  virtual void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) = 0;
  virtual void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) = 0;
  // true when the key existed.
  virtual void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) = 0;
  // The new value; a missing key counts as 0.
  virtual void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) = 0;
  // Aborted: a key this transaction read was changed by someone else meanwhile; nothing
  // was written.
  virtual void Commit(Done<absl::Status> done) = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual StoreLimits limits() const = 0;

  virtual void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) = 0;
  // One result per key, in order. The lookups are issued together (about one round trip).
  virtual void MultiGet(absl::Span<const std::string> keys,
                        Done<absl::StatusOr<std::vector<std::optional<std::string>>>> done) = 0;
  virtual void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) = 0;
  // true when the key existed.
  virtual void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) = 0;
  // Atomic read-modify-write; the new value. A missing key counts as 0.
  virtual void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) = 0;
  // A scan of the whole store (O(size)): for DBSIZE and INFO.
  virtual void Stats(Done<absl::StatusOr<StoreStats>> done) = 0;
  // The keys of one page of a scan, which begins with cursor 0 and ends when a page
  // answers cursor 0 (Redis SCAN's contract): a key present throughout a scan is in
  // exactly one of its pages; a key added or removed meanwhile may be in none, and (on
  // some layouts) one removed and added again in two. `count` is about how many keys a
  // page holds (at least 1); a page may be empty before the end. A cursor that no page
  // answered may skip keys, but never fails.
  // Unimplemented for a store whose keys cannot be enumerated.
  virtual void ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) = 0;
  virtual std::unique_ptr<StoreTxn> BeginTxn() = 0;
};

}  // namespace farm::kv

#endif  // FARM_KV_STORE_H_
