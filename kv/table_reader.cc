#include "kv/table_reader.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "kv/layout.h"

namespace farm::kv {

struct TableReader::Lookup {
  std::string key;
  uint64_t hash = 0;
  Home home;
  uint32_t restarts = 0;
  GetDone done;
  std::optional<LockFreeOp> op;
  std::vector<FatPtr> candidates;  // out-of-line values whose hash matches, to check
  size_t next_candidate = 0;
  FatPtr next_block;               // the chain's next block (null: none)
  size_t blocks = 0;
};

TableReader::TableReader(Context& ctx, std::shared_ptr<const ShardMap> map)
    : ctx_(ctx), map_(std::move(map)) {}

TableReader::~TableReader() = default;

void TableReader::Get(absl::string_view key, GetDone done) {
  Lookup* l = pool_.Take();
  ++stats_.lookups;
  l->key.assign(key.data(), key.size());
  l->hash = HashKey(key);
  l->home = map_->Locate(l->hash);
  l->restarts = 0;
  l->done = std::move(done);
  l->op.emplace(lockFreeStart(ctx_));
  ReadBuckets(l);
}

void TableReader::ReadBuckets(Lookup* l) {
  l->candidates.clear();
  l->next_candidate = 0;
  l->next_block = FatPtr{};
  l->blocks = 0;
  const std::array<FatPtr, 2> buckets = {map_->Bucket(l->home.shard, l->home.bucket),
                                         map_->Bucket(l->home.shard, l->home.bucket + 1)};
  ++stats_.reads;
  stats_.bytes_read += 2 * map_->layout().bucket_bytes();
  lockFreeReadMany(*l->op, buckets, [this, l](absl::StatusOr<std::span<const LockFreeObject>> r) {
    OnBuckets(l, std::move(r));
  });
}

void TableReader::OnBuckets(Lookup* l, absl::StatusOr<std::span<const LockFreeObject>> r) {
  if (!r.ok()) return pool_.Finish(l, r.status());
  std::span<const char> home = (*r)[0].data;
  std::span<const char> next = (*r)[1].data;
  if (FrontVersion(home) != BackVersion(next)) return Restart(l, "joint versions differ");
  if (Scan(l, home, true) || Scan(l, next, true)) return;
  l->next_block = OverflowOf(home, map_->layout());
  Continue(l);
}

bool TableReader::Scan(Lookup* l, std::span<const char> object, bool bucket) {
  const TableLayout& layout = map_->layout();
  const uint32_t slots = bucket ? layout.slots_per_bucket() : kSlotsPerBlock;
  for (uint32_t i = 0; i < slots; ++i) {
    std::span<const char> slot = bucket ? BucketSlot(object, layout, i) : BlockSlot(object, layout, i);
    if (absl::Status s = CheckSlot(slot, layout); !s.ok()) {
      pool_.Finish(l, s);
      return true;
    }
    switch (KindOf(slot)) {
      case SlotKind::kEmpty:
        break;
      case SlotKind::kInline:
        if (InlineKey(slot) == l->key) {
          pool_.Finish(l, std::optional<absl::string_view>(InlineValue(slot)));
          return true;
        }
        break;
      case SlotKind::kOutOfLine:
        if (OutOfLineHash(slot) == l->hash) l->candidates.push_back(OutOfLineValue(slot));
        break;
    }
  }
  return false;
}

// Checks the queued candidates, then follows the chain, then reports "no such key".
void TableReader::Continue(Lookup* l) {
  if (l->next_candidate < l->candidates.size()) {
    const FatPtr value = l->candidates[l->next_candidate++];
    ++stats_.reads;
    stats_.bytes_read += value.size;
    return lockFreeRead(*l->op, value, [this, l](absl::StatusOr<LockFreeObject> r) { OnValue(l, std::move(r)); });
  }
  if (!l->next_block.is_null()) {
    if (before_block_) return before_block_(l->key, l->blocks, [this, l] { ReadBlock(l); });
    return ReadBlock(l);
  }
  pool_.Finish(l, std::optional<absl::string_view>());
}

void TableReader::ReadBlock(Lookup* l) {
  const FatPtr block = l->next_block;
  ++stats_.reads;
  stats_.bytes_read += block.size;
  lockFreeRead(*l->op, block, [this, l](absl::StatusOr<LockFreeObject> r) { OnBlock(l, std::move(r)); });
}

void TableReader::OnValue(Lookup* l, absl::StatusOr<LockFreeObject> r) {
  if (!r.ok()) {
    if (r.status().code() == absl::StatusCode::kFailedPrecondition) return Restart(l, "value replaced");
    return pool_.Finish(l, r.status());
  }
  absl::StatusOr<std::pair<absl::string_view, absl::string_view>> kv = ParseValueObject(r->data);
  if (!kv.ok()) return pool_.Finish(l, kv.status());
  if (kv->first == l->key) return pool_.Finish(l, std::optional<absl::string_view>(kv->second));
  Continue(l);  // another key with the same hash
}

void TableReader::OnBlock(Lookup* l, absl::StatusOr<LockFreeObject> r) {
  if (!r.ok()) {
    if (r.status().code() == absl::StatusCode::kFailedPrecondition) return Restart(l, "chain changed");
    return pool_.Finish(l, r.status());
  }
  if (++l->blocks > (uint64_t{1} << 20)) return pool_.Finish(l, absl::InternalError("an overflow chain is cyclic"));
  if (Scan(l, r->data, false)) return;
  l->next_block = NextOf(r->data, map_->layout());
  Continue(l);
}

void TableReader::Restart(Lookup* l, absl::string_view why) {
  ++stats_.restarts;
  if (++l->restarts > kMaxRestarts) {
    return pool_.Finish(l, absl::DeadlineExceededError(absl::StrFormat(
                         "lookup restarted %d times (last: %s)", kMaxRestarts, why)));
  }
  // A new lock-free operation: the old one's memory guarantees are not needed any more.
  l->op.emplace(lockFreeStart(ctx_));
  ReadBuckets(l);
}

void TableReader::MultiGet(absl::Span<const std::string> keys, MultiGetDone done) {
  MultiGetByGets(
      ctx_, keys, [this](const std::string& key, GetDone d) { Get(key, std::move(d)); }, std::move(done));
}

}  // namespace farm::kv
