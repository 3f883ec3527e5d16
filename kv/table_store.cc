#include "kv/table_store.h"

#include <utility>

#include "farm/api/coro.h"
#include "kv/table_ops.h"

namespace farm::kv {
namespace {

// The op's own error, or its result.
absl::StatusOr<KeyOpResult> Flatten(absl::StatusOr<KeyOpResult> r) {
  if (r.ok() && !r->status.ok()) return r->status;
  return r;
}

class TableTxn : public StoreTxn {
 public:
  explicit TableTxn(TableClient& client) : client_(client), tx_(txCreate(client.ctx())) {}

  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override {
    Run(LookupInTx(*tx_, client_.map(), std::string(key)), std::move(done));
  }
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override {
    Apply(key, KeyOp{OpKind::kPut, std::string(value), 0},
          [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable { done(r.status()); });
  }
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override {
    Apply(key, KeyOp{OpKind::kRemove, {}, 0}, [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
      if (!r.ok()) return done(r.status());
      done(r->existed);
    });
  }
  void Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) override {
    Apply(key, KeyOp{OpKind::kIncrement, {}, delta},
          [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
            if (!r.ok()) return done(r.status());
            done(r->number);
          });
  }
  void Commit(Done<absl::Status> done) override {
    writes_.Seal();
    txCommit(*tx_, std::move(done));
  }

 private:
  void Apply(absl::string_view key, KeyOp op, Done<absl::StatusOr<KeyOpResult>> done) {
    std::vector<KeyOp> ops;
    ops.push_back(std::move(op));
    Run(ApplyToKey(*tx_, client_.map(), writes_, std::string(key), std::move(ops)),
        [done = std::move(done)](absl::StatusOr<std::vector<KeyOpResult>> r) mutable {
          if (!r.ok()) return done(r.status());
          done(Flatten(std::move((*r)[0])));
        });
  }
  // Runs a table operation; its continuation always runs later (a task may finish
  // before its first suspension).
  template <typename T, typename D>
  void Run(Task<T> task, D done) {
    Context* ctx = &client_.ctx();
    Spawn(std::move(task), [ctx, done = std::move(done)](T r) mutable {
      ctx->Defer([r = std::move(r), done = std::move(done)]() mutable { done(std::move(r)); });
    });
  }

  TableClient& client_;
  TxHandle tx_;
  BucketWrites writes_;
};

}  // namespace

void TableStore::Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) {
  client_.Get(key, [done = std::move(done)](absl::StatusOr<std::optional<absl::string_view>> r) mutable {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(std::optional<std::string>());
    done(std::optional<std::string>(std::string(**r)));
  });
}

void TableStore::MultiGet(absl::Span<const std::string> keys,
                          Done<absl::StatusOr<std::vector<std::optional<std::string>>>> done) {
  client_.MultiGet(keys, std::move(done));
}

void TableStore::Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) {
  client_.Update(OpKind::kPut, key, value, 0, [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
    done(Flatten(std::move(r)).status());
  });
}

void TableStore::Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) {
  client_.Update(OpKind::kRemove, key, {}, 0, [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
    r = Flatten(std::move(r));
    if (!r.ok()) return done(r.status());
    done(r->existed);
  });
}

void TableStore::Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) {
  client_.Update(OpKind::kIncrement, key, {}, delta,
                 [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
                   r = Flatten(std::move(r));
                   if (!r.ok()) return done(r.status());
                   done(r->number);
                 });
}

void TableStore::Stats(Done<absl::StatusOr<StoreStats>> done) {
  client_.Scan([done = std::move(done)](absl::StatusOr<TableScan> scan) mutable {
    if (!scan.ok()) return done(scan.status());
    done(StoreStats{scan->pairs, scan->pair_bytes, scan->memory_bytes, scan->bucket_slots,
                    scan->overflow_blocks});
  });
}

std::unique_ptr<StoreTxn> TableStore::BeginTxn() { return std::make_unique<TableTxn>(client_); }

}  // namespace farm::kv
