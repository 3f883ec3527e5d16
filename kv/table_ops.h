// The hashtable's operations inside a FaRM transaction: lookups by txRead and the
// mutations of paper section 3.6 (insert with hopscotch displacement and overflow
// chains, update, remove with chain collapse). The primary runs them in single-machine
// transactions for shipped updates (kv/update_executor.h); MULTI/EXEC runs them in a
// client's distributed transaction. Strict serializability comes from the transaction;
// these functions keep the table's invariants:
//   1. a pair lives in its home bucket b, in b+1, or in b's overflow chain;
//   2. only the last block of a chain has empty slots, and no block is empty;
//   3. a transaction that writes buckets j and j+1 sets j's fv and j+1's bv to a new
//      common value (joint versions, for lock-free READs of both);
//   4. a pair never moves to a place a lookup may already have passed while its old
//      place stays on that lookup's way. Lookups read buckets b and b+1 in one READ
//      and then the chain block by block, each pointer taken from the object read
//      before it. So a pair moves only (a) between b and b+1, under invariant 3, or
//      (b) from a chain's last block into the hole a remove left (in b, b+1 or an
//      earlier block): then every block after the hole's place gets a new incarnation
//      (the last one, if emptied, is freed) and its predecessor's pointer is
//      rewritten, so a lookup holding a pointer to any of them, taken before the move,
//      restarts instead of reaching the chain's end without the pair;
//   5. out-of-line values are never modified: an update writes a new object and frees
//      the old one.
#ifndef FARM_KV_TABLE_OPS_H_
#define FARM_KV_TABLE_OPS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/key_batch.h"
#include "kv/key_ops.h"
#include "kv/shard_map.h"
#include "kv/update_executor.h"

namespace farm::kv {

// Buckets probed forward for an empty slot before a pair goes to the overflow chain.
inline constexpr uint32_t kProbeLimit = 16;

// The buckets a transaction wrote. Seal() gives every two adjacent ones a new common
// joint version (invariant 3); call it once, after the last ApplyToKey and before
// commit (a pair may be moved by one call and another by the next).
class BucketWrites {
 public:
  void Add(uint32_t shard, uint32_t bucket, ObjBuf* object);
  void Seal();

 private:
  struct Written {
    uint32_t shard;
    uint32_t bucket;
    ObjBuf* object;
  };
  std::vector<Written> written_;
};

// Applies `ops` to `key` in order, as if one after another, and writes the final
// state once (flat combining: a batch of updates of one key costs one update). Each
// op's own errors are in its result and leave the state as it was; the returned error
// is the transaction's (Aborted, FailedPrecondition for a freed block: retry) or a
// corrupt table (Internal), or InvalidArgument for a key or value over the limits.
Task<absl::StatusOr<std::vector<KeyOpResult>>> ApplyToKey(Tx& tx, const ShardMap& map,
                                                          BucketWrites& writes, std::string key,
                                                          std::vector<KeyOp> ops);

// ApplyToKey for the update executor (kv/update_executor.h): each key of the batch with
// one BucketWrites (a later key may move a pair an earlier one wrote), then Seal.
class HopscotchApplier final : public KeyOpsApplier {
 public:
  explicit HopscotchApplier(std::shared_ptr<const ShardMap> map) : map_(std::move(map)) {}
  Task<absl::StatusOr<size_t>> Apply(Tx& tx, absl::Span<KeyUpdates> keys,
                                     uint64_t max_write_bytes) const override;
  const std::shared_ptr<const ShardMap>& map() const { return map_; }

 private:
  const std::shared_ptr<const ShardMap> map_;
};

// The key's value as this transaction sees it.
Task<absl::StatusOr<std::optional<std::string>>> LookupInTx(Tx& tx, const ShardMap& map,
                                                            std::string key);

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_OPS_H_
