// The chained table's operations inside a FaRM transaction: lookups, inserts, updates
// and removes (shipped updates run them as single-machine transactions on the
// partition's primary, kv/update_executor.h; MULTI/EXEC in a client's distributed
// transaction), and the expansion's steps (kv/chained/expander.h).
//
// Invariants (the lock-free lookups of kv/chained/chained_reader.h rely on them):
//   1. A partition has one current table and, while it expands, one next table of
//      twice the buckets; the root names both. Key k lives in the bucket
//      b = BucketIndex(h, N) of the current table unless that head is marked moved,
//      and then in bucket BucketIndex(h, 2N) of the next table (b or b + N).
//   2. A head is marked moved only by the transaction that migrates it, which in the
//      same transaction writes the bucket's pairs into next-table heads b and b + N
//      (with their chains) and empties the old head (no slots, no chain; its blocks are
//      freed). A moved head is never written again until its table is freed. No
//      transaction writes a next-table head b or b + N before old head b is moved (an
//      update reads the old head, in its read set, and goes to the next table only when
//      it sees "moved"), so migration never overwrites pairs.
//   3. Every transaction that changes a bucket (its pairs or chain) writes its head:
//      the head's FaRM version (its lock word) changes with any change of the chain.
//   4. A bucket's pairs are packed (head first, then its blocks in chain order); a key
//      is in at most one slot of one bucket of one table.
//   5. The root changes only when an expansion starts (next set) or ends (current =
//      next, next cleared, after every head of the old current is moved); the old
//      table's heads and directory are freed after the end, so a stale pointer to
//      them fails its incarnation check (FailedPrecondition) instead of reading reused
//      memory. The initial table (the catalog shard's) is never freed: its heads stay
//      marked moved.
//   6. Out-of-line values are never modified: an update writes a new object next to
//      the head and frees the old one; migration copies the slot (the pointer) only.
// An operation's transaction reads the root and every object of the key's bucket it
// uses, so an expansion step or an update that changes them before it commits makes
// its validation fail (Aborted): strict serializability is the transaction's.
#ifndef FARM_KV_CHAINED_CHAINED_OPS_H_
#define FARM_KV_CHAINED_CHAINED_OPS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/chained/partition_map.h"
#include "kv/key_ops.h"
#include "kv/update_executor.h"

namespace farm::kv::chained {

// A partition's root and tables as a transaction read them.
struct TxTables {
  ObjBuf* root = nullptr;
  RootState state;
  std::shared_ptr<const BucketTable> current;
  std::shared_ptr<const BucketTable> next;  // null when not expanding
};

Task<absl::StatusOr<TxTables>> ReadTablesInTx(Tx& tx, const ChainedTable& table, uint32_t partition);

// Applies `ops` to `key` in order, as if one after another, and writes the bucket's
// final state once. Each op's own errors are in its result and leave the state as it
// was; the returned error is the transaction's (Aborted, FailedPrecondition: retry), a
// corrupt table (Internal) or InvalidArgument for a key over the limit.
Task<absl::StatusOr<std::vector<KeyOpResult>>> ApplyToKey(Tx& tx, const ChainedTable& table, std::string key,
                                                          std::vector<KeyOp> ops);

// The key's value as this transaction sees it.
Task<absl::StatusOr<std::optional<std::string>>> LookupInTx(Tx& tx, const ChainedTable& table, std::string key);

// Migrates bucket `b` of the current table of `tables` into the next one (invariant 2):
// true when it moved it, false when it was moved already.
Task<absl::StatusOr<bool>> MigrateBucketInTx(Tx& tx, const ChainedTable& table, const TxTables& tables,
                                             uint64_t b);

// The pairs in chains a committed batch added (+1), removed (-1) or neither (0): from
// the first op's `existed` and the ops that succeeded.
int PairDelta(absl::Span<const KeyOp> ops, absl::Span<const KeyOpResult> results);

// ApplyToKey for the update executor, key by key; `committed(partition, delta)` hears
// each committed key's PairDelta (the expansion trigger's count).
class ChainedApplier final : public KeyOpsApplier {
 public:
  using Committed = std::function<void(Context& ctx, uint32_t partition, int delta)>;
  ChainedApplier(ChainedTable table, Committed committed)
      : table_(std::move(table)), committed_(std::move(committed)) {}
  Task<absl::StatusOr<size_t>> Apply(Tx& tx, absl::Span<KeyUpdates> keys,
                                     uint64_t max_write_bytes) const override;
  void OnCommitted(Context& ctx, absl::string_view key, absl::Span<const KeyOp> ops,
                   absl::Span<const KeyOpResult> results) const override;

 private:
  const ChainedTable table_;
  const Committed committed_;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_OPS_H_
