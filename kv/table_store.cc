#include "kv/table_store.h"

#include <utility>


namespace farm::kv {

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
    done(FlattenOpResult(std::move(r)).status());
  });
}

void TableStore::Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) {
  client_.Update(OpKind::kRemove, key, {}, 0, [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
    r = FlattenOpResult(std::move(r));
    if (!r.ok()) return done(r.status());
    done(r->existed);
  });
}

void TableStore::Increment(absl::string_view key, int64_t delta, Done<absl::StatusOr<int64_t>> done) {
  client_.Update(OpKind::kIncrement, key, {}, delta,
                 [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
                   r = FlattenOpResult(std::move(r));
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

}  // namespace farm::kv
