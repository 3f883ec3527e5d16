// The linear-probing table's operations inside a FaRM transaction: lookups by txRead,
// and inserts, updates and removes (shipped updates run them in single-machine
// transactions when a key's probe stays in its home shard, kv/update_executor.h;
// MULTI/EXEC runs them in a client's distributed transaction). Strict serializability
// comes from the transaction; these functions keep the table's invariants, on which
// the lock-free lookups (kv/linear/linear_reader.h) rely:
//   1. a key is in at most one slot, and every slot from its home up to that slot is
//      non-empty (occupied or a tombstone): a probe from the home reaches the key
//      before any empty slot (Knuth's invariant of linear probing);
//   2. a pair never moves: an update rewrites its slot in place, a remove turns it
//      into a tombstone (or empty, rule 3), an insert takes the first tombstone or empty
//      slot of the key's probe sequence; so a key present throughout a lookup stays in
//      one slot all that time;
//   3. a slot becomes empty again only when the slot after it (in probe order) is empty
//      after the same transaction: a remove whose slot is followed, past tombstones
//      only, by an empty slot clears those tombstones, its own slot, and every tombstone
//      right before it back to the key's home; an insert clears the tombstones right
//      before the empty slot its probe stopped at (only slots the transaction read).
//      No key's probe path runs through such a slot (rule 1 would need the next slot
//      non-empty), so rule 1 holds. Why tombstones and not backward
//      shift: backward-shift deletion moves pairs toward their home, to slots a
//      concurrent lock-free lookup may have passed already, and the lookup would miss a
//      key that was present throughout; tombstones never move a pair (rule 2);
//   4. a pair is placed within ProbeMap::max_probe() slots of its home (an insert that
//      finds no free slot there fails ResourceExhausted, nothing written), so every
//      probe stops there at the latest;
//   5. out-of-line values are never modified: an update writes a new object (next to
//      the home group) and frees the old one;
//   6. every group a transaction writes is stamped with the group tag and version.
// Tombstones inside runs are reclaimed only when an insert reuses one (no rehash): a
// table with much churn at a high load factor keeps some, and lookups of absent keys
// grow longer (kv/README.md).
#ifndef FARM_KV_LINEAR_LINEAR_OPS_H_
#define FARM_KV_LINEAR_LINEAR_OPS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/key_batch.h"
#include "kv/key_ops.h"
#include "kv/linear/probe_map.h"
#include "kv/update_executor.h"

namespace farm::kv::linear {

// Applies `ops` to `key` in order, as if one after another, and writes the final state
// once. Each op's own errors are in its result and leave the state as it was; the
// returned error is the transaction's (Aborted, FailedPrecondition: retry), a corrupt
// table (Internal), InvalidArgument for a key over the limit, or ResourceExhausted when
// an insert finds no free slot within the probe bound.
Task<absl::StatusOr<std::vector<KeyOpResult>>> ApplyToKey(Tx& tx, const ProbeMap& map, std::string key,
                                                          std::vector<KeyOp> ops);

// The key's value as this transaction sees it.
Task<absl::StatusOr<std::optional<std::string>>> LookupInTx(Tx& tx, const ProbeMap& map, std::string key);

// ApplyToKey for the update executor, key by key (a later key's probe sees what an
// earlier one wrote: the transaction's copies).
class LinearApplier final : public KeyOpsApplier {
 public:
  explicit LinearApplier(std::shared_ptr<const ProbeMap> map) : map_(std::move(map)) {}
  Task<absl::StatusOr<size_t>> Apply(Tx& tx, absl::Span<KeyUpdates> keys,
                                     uint64_t max_write_bytes) const override;

 private:
  const std::shared_ptr<const ProbeMap> map_;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_OPS_H_
