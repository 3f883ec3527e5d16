#include "kv/chained/chained_txn.h"

#include <utility>
#include <vector>

#include "kv/chained/chained_ops.h"
#include "kv/tx_operation.h"

namespace farm::kv::chained {

void ChainedTxn::Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) {
  RunTxOperation(client_.ctx(), LookupInTx(*tx_, client_.table(), std::string(key)), std::move(done));
}

void ChainedTxn::Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) {
  Apply(key, KeyOp{OpKind::kPut, std::string(value), 0},
        [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable { done(r.status()); });
}

void ChainedTxn::Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) {
  Apply(key, KeyOp{OpKind::kRemove, {}, 0}, [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
    if (!r.ok()) return done(r.status());
    done(r->existed);
  });
}

void ChainedTxn::Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) {
  Apply(key, KeyOp{OpKind::kIncrement, {}, delta}, [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
    if (!r.ok()) return done(r.status());
    done(r->number);
  });
}

void ChainedTxn::Apply(absl::string_view key, KeyOp op, Done<absl::StatusOr<KeyOpResult>> done) {
  std::vector<KeyOp> ops;
  ops.push_back(std::move(op));
  RunTxOperation(client_.ctx(), ApplyToKey(*tx_, client_.table(), std::string(key), std::move(ops)),
                 [done = std::move(done)](absl::StatusOr<std::vector<KeyOpResult>> r) mutable {
                   if (!r.ok()) return done(r.status());
                   done(FlattenOpResult(std::move((*r)[0])));
                 });
}

}  // namespace farm::kv::chained
