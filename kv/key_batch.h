// KeyUpdates: one key's updates inside a batch transaction of many keys (the primary's
// cross-key flat combining, kv/update_executor.h), and the write budget that keeps such
// a transaction's commit record within one message.
//
// A layout's applier (KeyOpsApplier::Apply) runs the keys of a batch in order in one
// transaction, each with its layout's per-key code (kv/table_ops.h, linear/linear_ops.h,
// chained/chained_ops.h): a key's ops as if one after another, its final state written
// once. Keys are distinct within a batch, so a key's ops never straddle transactions.
// Before each key after the first it asks WriteBudget: a key whose writes might carry the
// transaction past the budget is left for the next transaction (the applier returns how
// many keys it applied, a prefix of at least one). ApplyKeysInOrder is that loop.
#ifndef FARM_KV_KEY_BATCH_H_
#define FARM_KV_KEY_BATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/key_ops.h"

namespace farm::kv {

struct KeyUpdates {
  absl::string_view key;          // owned by the batch; valid while it runs
  absl::Span<const KeyOp> ops;    // in arrival order; copied per attempt by the applier
  std::vector<KeyOpResult> results;  // one per op, set by the applier's last attempt
};

// The bytes of commit records (txWriteBytes) a batch transaction aims to stay under:
// 24 KiB as the graph store's (graph/graph_client.h), well below a message's 65,504
// bytes, so one key's writes beyond the estimate below still fit.
inline constexpr uint64_t kBatchWriteBytes = 24 * 1024;
// What a key's writes add besides its key and value, as EstimatedWriteBytes counts them: its
// bucket or slot group, a neighbour, an overflow block.
inline constexpr uint64_t kKeyOverheadBytes = 2 * 1024;

// What a key's writes are expected to add to a transaction's commit records: its key,
// the largest value it puts within the limit, and kKeyOverheadBytes.
uint64_t EstimatedWriteBytes(const KeyUpdates& key);

// The budget of one batch transaction as it takes keys in order: the first key always
// fits; a later one when the bytes so far plus its estimate stay within `budget`. The
// bytes so far are txWriteBytes, which costs O(objects in the transaction): it is asked
// only when the last answer plus the estimates of the keys taken since could exceed the
// budget. (A key that writes more than its estimate can make a commit larger than the
// budget; one larger than a message fails before anything is sent, and the executor
// splits the batch.)
class WriteBudget {
 public:
  explicit WriteBudget(uint64_t budget) : budget_(budget) {}
  bool Fits(const Tx& tx, size_t index, const KeyUpdates& next);

 private:
  const uint64_t budget_;
  uint64_t known_ = 0;  // txWriteBytes when last asked, plus the estimates of keys taken since
};

// Applies keys in order with `apply_key(key, ops)` (a layout's per-key code: a Task of
// StatusOr<std::vector<KeyOpResult>>, given copies it may consume) while they fit the
// budget; stores each key's results. Returns how many keys it applied, or the first
// error. `apply_key` is copied into the coroutine: what it refers to must outlive it.
template <typename ApplyKey>
Task<absl::StatusOr<size_t>> ApplyKeysInOrder(Tx& tx, absl::Span<KeyUpdates> keys, uint64_t budget,
                                              ApplyKey apply_key) {
  WriteBudget fits(budget);
  size_t i = 0;
  for (; i < keys.size(); ++i) {
    KeyUpdates& k = keys[i];
    if (!fits.Fits(tx, i, k)) break;
    absl::StatusOr<std::vector<KeyOpResult>> results =
        co_await apply_key(std::string(k.key), std::vector<KeyOp>(k.ops.begin(), k.ops.end()));
    if (!results.ok()) co_return results.status();
    k.results = std::move(*results);
  }
  co_return i;
}

}  // namespace farm::kv

#endif  // FARM_KV_KEY_BATCH_H_
