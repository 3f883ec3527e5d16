// KvClient: one worker thread's handle on a key-value table of any layout (the seam
// between the layouts and their users, with KvTable in kv/kv_table.h): lock-free
// lookups and multi-gets, updates shipped to the machine that holds the key, multi-key
// transactions, a scan for statistics, and the lookups' own counts. kv::TableStore
// (kv/table_store.h) is the kv::Store over any KvClient.
//
// Implemented by TableClient (FaRM's hopscotch table, kv/table_client.h),
// LinearClient (linear probing, kv/linear/linear_client.h), ChainedClient (Mercury's
// chained table, kv/chained/chained_client.h) and CuckooClient (Nessie's client-driven
// cuckoo table, kv/cuckoo/cuckoo_client.h: BeginTxn is Unimplemented).
//
// Contract, for every layout:
//   - Threads: the owning worker thread only; continuations run there, never inside
//     the call. The client must outlive its operations in flight.
//   - Get, each key of MultiGet and each Update are linearizable; BeginTxn's
//     transactions are strictly serializable (kv/store.h's StoreTxn contract), where a
//     layout has them (cuckoo: every StoreTxn call answers Unimplemented).
//   - Keys up to kMaxKeyBytes and values up to kMaxValueBytes (kv/key_ops.h): beyond,
//     InvalidArgument and nothing is sent. Other errors as kv/store.h lists them.
//   - A value handed to GetDone is valid during the continuation only.
#ifndef FARM_KV_KV_CLIENT_H_
#define FARM_KV_KV_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/farm.h"
#include "kv/key_ops.h"
#include "kv/store.h"

namespace farm::kv {

// The value (nullopt: no such key), valid during the continuation only.
using GetDone = absl::AnyInvocable<void(absl::StatusOr<std::optional<absl::string_view>>)>;
// One result per key, in order; fails as a whole with the first lookup's error.
using MultiGetDone = absl::AnyInvocable<void(absl::StatusOr<std::vector<std::optional<std::string>>>)>;

// A client's lookups so far (its own counts, kept by the layout's reader).
struct LookupStats {
  uint64_t lookups = 0;
  uint64_t reads = 0;       // object reads issued (one READ each; local ones copy memory)
  uint64_t bytes_read = 0;  // payload bytes of the objects read
  uint64_t restarts = 0;
};

// What a scan of the table finds (a fuzzy snapshot: concurrent updates may or may not
// be counted). Memory counts the table's own objects by their stride exactly and
// overflow blocks and values by their stored size rounded to 16 bytes (their slot may
// be up to 3.5% larger). Hopscotch: bucket_slots are the buckets' slots, chains count
// blocks. Linear probing: bucket_slots are all the table's slots, pairs_in_buckets =
// pairs, no blocks; tombstones and longest_run are its own. Cuckoo: bucket_slots are the
// pairs the data tables are sized for, index_slots the index's entries, pairs the
// non-empty index entries (a pair being migrated counts twice).
struct TableScan {
  uint64_t pairs = 0;
  uint64_t pairs_in_buckets = 0;
  uint64_t bucket_slots = 0;
  uint64_t overflow_blocks = 0;
  uint64_t out_of_line = 0;
  uint64_t pair_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t longest_chain = 0;
  uint64_t tombstones = 0;   // linear probing: slots of removed pairs a probe passes
  uint64_t longest_run = 0;  // linear probing: the longest run of non-empty slots
  uint64_t buckets_in_use = 0;  // chained: heads holding at least one pair
  uint64_t expanding = 0;       // chained: partitions in the middle of an expansion
  uint64_t index_slots = 0;  // cuckoo: the N-way index's 64-bit entries (bucket_slots: capacity)
  double occupancy() const { return bucket_slots ? double(pairs) / double(bucket_slots) : 0; }
  double utilisation() const { return memory_bytes ? double(pair_bytes) / double(memory_bytes) : 0; }
};

// For implementations: whether every key is within kMaxKeyBytes; if not, `done` gets
// InvalidArgument later on ctx's thread (never inside the call) and nothing is sent.
bool KeysWithinLimit(Context& ctx, absl::string_view key, GetDone& done);
bool KeysWithinLimit(Context& ctx, absl::Span<const std::string> keys, MultiGetDone& done);
// Whether an update's key is within kMaxKeyBytes and its value within kMaxValueBytes;
// if not, the same (InvalidArgument to `done` later on ctx's thread).
bool UpdateWithinLimits(Context& ctx, absl::string_view key, absl::string_view value,
                        Done<absl::StatusOr<KeyOpResult>>& done);

// MultiGet as lookups issued together, one `get` per key (a layout's Get), for layouts
// whose lookups have no batched form: one result per key, in order, or the first
// lookup's error; `done` runs on ctx's thread, never inside the call.
void MultiGetByGets(Context& ctx, absl::Span<const std::string> keys,
                    absl::FunctionRef<void(const std::string& key, GetDone done)> get, MultiGetDone done);

class KvClient {
 public:
  virtual ~KvClient() = default;

  virtual void Get(absl::string_view key, GetDone done) = 0;
  // The lookups are issued together (about one round trip).
  virtual void MultiGet(absl::Span<const std::string> keys, MultiGetDone done) = 0;
  // kPut (value), kRemove, kIncrement (delta): the op's own error is in its result.
  virtual void Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
                      Done<absl::StatusOr<KeyOpResult>> done) = 0;
  virtual void Scan(Done<absl::StatusOr<TableScan>> done) = 0;
  // One page of a scan of the keys (kv/store.h Store::ScanKeys). Layouts that have none
  // answer Unimplemented (later on ctx's thread): hopscotch and linear have one.
  virtual void ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done);
  // A transaction over several keys in one FaRM transaction (kv/store.h StoreTxn).
  virtual std::unique_ptr<StoreTxn> BeginTxn() = 0;

  virtual const LookupStats& lookup_stats() const = 0;
  virtual Context& ctx() const = 0;
};

}  // namespace farm::kv

#endif  // FARM_KV_KV_CLIENT_H_
