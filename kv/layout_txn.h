// LayoutTxn<Ops>: a transaction over several keys (kv/store.h's StoreTxn; Redis
// MULTI/EXEC and WATCH) for any layout whose operations run inside a FaRM transaction
// (hopscotch, linear, chained): the layout's Ops in one distributed FaRM transaction,
// one operation at a time. Made by the layout's client (KvClient::BeginTxn); used on
// the client's thread only; every continuation runs later on that thread, never
// inside the call. Destroying it uncommitted aborts the FaRM transaction.
//
// Ops, the layout's part, kept by value in the transaction (so a Task that refers to
// it stays valid while the transaction lives):
//   Task<absl::StatusOr<std::optional<std::string>>> Lookup(Tx& tx, std::string key);
//       the key's value as the transaction sees it;
//   Task<absl::StatusOr<std::vector<KeyOpResult>>> Apply(Tx& tx, std::string key,
//                                                        std::vector<KeyOp> ops);
//       ops applied to the key in order (kv/key_ops.h), one result per op;
//   void BeforeCommit();  what the layout must write before the commit, if anything.
// TxnOpsOf<Table> is the Ops of a layout whose LookupInTx(tx, table, key) and
// ApplyToKey(tx, table, key, ops) are free functions of the table's namespace and need
// nothing before the commit. The layout's table must outlive the transaction.
//
// The cost per operation is the layout's Task and one vector of one op: no virtual call
// beyond StoreTxn's own.
#ifndef FARM_KV_LAYOUT_TXN_H_
#define FARM_KV_LAYOUT_TXN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "kv/key_ops.h"
#include "kv/store.h"
#include "kv/tx_operation.h"

namespace farm::kv {

template <typename Ops>
class LayoutTxn final : public StoreTxn {
 public:
  LayoutTxn(Context& ctx, Ops ops) : ctx_(ctx), tx_(txCreate(ctx)), ops_(std::move(ops)) {}

  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override {
    RunTxOperation(ctx_, ops_.Lookup(*tx_, std::string(key)), std::move(done));
  }
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override {
    Apply(key, KeyOp{OpKind::kPut, std::string(value), 0},
          [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable { done(r.status()); });
  }
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override {
    Apply(key, KeyOp{OpKind::kRemove, {}, 0},
          [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
            if (!r.ok()) return done(r.status());
            done(r->existed);
          });
  }
  void Increment(absl::string_view key, int64_t delta,
                 Done<absl::StatusOr<int64_t>> done) override {
    Apply(key, KeyOp{OpKind::kIncrement, {}, delta},
          [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
            if (!r.ok()) return done(r.status());
            done(r->number);
          });
  }
  void Commit(Done<absl::Status> done) override {
    ops_.BeforeCommit();
    txCommit(*tx_, std::move(done));
  }

 private:
  // One op on the key; its own error (FlattenOpResult) or the transaction's.
  void Apply(absl::string_view key, KeyOp op, Done<absl::StatusOr<KeyOpResult>> done) {
    std::vector<KeyOp> ops;
    ops.push_back(std::move(op));
    RunTxOperation(ctx_, ops_.Apply(*tx_, std::string(key), std::move(ops)),
                   [done = std::move(done)](absl::StatusOr<std::vector<KeyOpResult>> r) mutable {
                     if (!r.ok()) return done(r.status());
                     done(FlattenOpResult(std::move((*r)[0])));
                   });
  }

  Context& ctx_;
  TxHandle tx_;
  Ops ops_;
};

template <typename Table>
class TxnOpsOf {
 public:
  explicit TxnOpsOf(const Table& table) : table_(&table) {}
  Task<absl::StatusOr<std::optional<std::string>>> Lookup(Tx& tx, std::string key) const {
    return LookupInTx(tx, *table_, std::move(key));
  }
  Task<absl::StatusOr<std::vector<KeyOpResult>>> Apply(Tx& tx, std::string key,
                                                       std::vector<KeyOp> ops) const {
    return ApplyToKey(tx, *table_, std::move(key), std::move(ops));
  }
  void BeforeCommit() const {}

 private:
  const Table* table_;
};

}  // namespace farm::kv

#endif  // FARM_KV_LAYOUT_TXN_H_
