#include "kv/chained/chained_reader.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "kv/chained/bucket_format.h"
#include "kv/layout.h"

namespace farm::kv::chained {
namespace {

bool Stale(const absl::Status& s) { return s.code() == absl::StatusCode::kFailedPrecondition; }

}  // namespace

ChainedReader::ChainedReader(Context& ctx, ChainedTable table) : ctx_(ctx), table_(std::move(table)) {
  views_.resize(table_.map->size());
  for (size_t p = 0; p < views_.size(); ++p) views_[p].current = table_.map->partition(p).initial;
}

void ChainedReader::Get(absl::string_view key, GetDone done) {
  Spawn(Lookup(std::string(key)), [done = std::move(done)](absl::StatusOr<std::optional<std::string>> r) mutable {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(std::optional<absl::string_view>());
    done(std::optional<absl::string_view>(**r));
  });
}

void ChainedReader::MultiGet(absl::Span<const std::string> keys, MultiGetDone done) {
  struct Gather {
    std::vector<std::optional<std::string>> values;
    absl::Status error;
    size_t pending = 0;
    MultiGetDone done;
  };
  auto gather = std::make_shared<Gather>();
  gather->values.resize(keys.size());
  gather->pending = keys.size();
  gather->done = std::move(done);
  if (keys.empty()) {
    ctx_.Defer([gather] { gather->done(std::move(gather->values)); });
    return;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    Spawn(Lookup(keys[i]), [gather, i](absl::StatusOr<std::optional<std::string>> r) {
      if (!r.ok()) {
        if (gather->error.ok()) gather->error = r.status();
      } else {
        gather->values[i] = std::move(*r);
      }
      if (--gather->pending > 0) return;
      if (!gather->error.ok()) return gather->done(gather->error);
      gather->done(std::move(gather->values));
    });
  }
}

Task<absl::StatusOr<LockFreeCopy>> ChainedReader::Read(LockFreeOp& op, FatPtr object) {
  ++stats_.reads;
  absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(op, object);
  if (copy.ok()) stats_.bytes_read += copy->data.size();
  co_return copy;
}

Task<absl::StatusOr<PartitionView>> ChainedReader::Refresh(uint32_t partition) {
  const Partition& part = table_.map->partition(partition);
  LockFreeOp op = lockFreeStart(ctx_);
  ++chain_.root_reads;
  absl::StatusOr<LockFreeCopy> root = co_await Read(op, part.root);
  if (!root.ok()) co_return root.status();
  const RootState state = ReadRoot(std::span<const char>(root->data.data(), root->data.size()));
  PartitionView view;
  for (int which = 0; which < 2; ++which) {
    const TableRef& ref = which == 0 ? state.current : state.next;
    std::shared_ptr<const BucketTable> t;
    if (which == 1 && !state.expanding()) break;
    if (ref.directory.is_null()) {
      t = part.initial;
    } else if ((t = table_.tables->Find(ref.directory)) == nullptr) {
      ++chain_.root_reads;
      absl::StatusOr<LockFreeCopy> dir = co_await Read(op, ref.directory);
      // A directory freed since the root was read: the caller restarts and reads the root again.
      if (!dir.ok()) co_return dir.status();
      absl::StatusOr<std::shared_ptr<const BucketTable>> added =
          table_.tables->Add(ref.directory, std::span<const char>(dir->data.data(), dir->data.size()));
      if (!added.ok()) co_return added.status();
      t = *added;
    }
    (which == 0 ? view.current : view.next) = std::move(t);
  }
  views_[partition] = view;
  co_return view;
}

Task<absl::StatusOr<std::optional<std::string>>> ChainedReader::FindIn(LockFreeOp& op, std::span<const char> bucket,
                                                                       absl::string_view key, uint64_t hash,
                                                                       bool& gone) {
  const BucketLayout& layout = table_.map->layout();
  if (bucket[0] == 0) co_return std::nullopt;
  for (uint32_t i = 0; i < layout.slots_per_bucket; ++i) {
    std::span<const char> slot = BucketSlotAt(bucket, layout, i);
    const SlotKind kind = KindOf(slot);
    if (kind == SlotKind::kEmpty) break;
    if (kind == SlotKind::kInline) {
      if (InlineKey(slot) == key) co_return std::string(InlineValue(slot));
      continue;
    }
    if (OutOfLineHash(slot) != hash) continue;
    ++chain_.value_reads;
    absl::StatusOr<LockFreeCopy> value = co_await Read(op, OutOfLineValue(slot));
    if (!value.ok()) {
      if (!Stale(value.status())) co_return value.status();
      gone = true;
      co_return std::nullopt;
    }
    absl::StatusOr<std::pair<absl::string_view, absl::string_view>> kv =
        ParseValueObject(std::span<const char>(value->data.data(), value->data.size()));
    if (!kv.ok()) co_return kv.status();
    if (kv->first == key) co_return std::string(kv->second);
  }
  co_return std::nullopt;
}

Task<absl::StatusOr<ChainedReader::Outcome>> ChainedReader::LookupOnce(LockFreeOp& op, const PartitionView& view,
                                                                       absl::string_view key, uint64_t hash) {
  const BucketLayout& layout = table_.map->layout();
  Outcome restart{true, false, std::nullopt};
  Outcome refresh{true, true, std::nullopt};
  FatPtr head_ptr = view.current->Bucket(BucketIndex(hash, view.current->buckets()));
  ++chain_.head_reads;
  absl::StatusOr<LockFreeCopy> head = co_await Read(op, head_ptr);
  if (!head.ok()) co_return Stale(head.status()) ? absl::StatusOr<Outcome>(refresh) : head.status();
  std::span<const char> data(head->data.data(), head->data.size());
  if (absl::Status s = CheckBucket(data, layout); !s.ok()) co_return s;
  if (IsMoved(data)) {
    if (view.next == nullptr) co_return refresh;
    ++chain_.next_table;
    head_ptr = view.next->Bucket(BucketIndex(hash, view.next->buckets()));
    ++chain_.head_reads;
    head = co_await Read(op, head_ptr);
    if (!head.ok()) co_return Stale(head.status()) ? absl::StatusOr<Outcome>(refresh) : head.status();
    data = std::span<const char>(head->data.data(), head->data.size());
    if (absl::Status s = CheckBucket(data, layout); !s.ok()) co_return s;
    if (IsMoved(data)) co_return refresh;
  }
  const uint64_t head_version = head->version;
  bool gone = false;
  absl::StatusOr<std::optional<std::string>> found = co_await FindIn(op, data, key, hash, gone);
  if (!found.ok()) co_return found.status();
  if (gone) co_return restart;
  if (found->has_value()) co_return Outcome{false, false, std::move(*found)};
  FatPtr next = data[0] == 0 ? FatPtr{} : NextBlock(data);
  if (next.is_null()) co_return Outcome{};
  for (uint32_t blocks = 0; !next.is_null(); ++blocks) {
    if (blocks > (1u << 16)) co_return absl::InternalError("chained: a chain that does not end");
    ++chain_.block_reads;
    absl::StatusOr<LockFreeCopy> block = co_await Read(op, next);
    if (!block.ok()) co_return Stale(block.status()) ? absl::StatusOr<Outcome>(restart) : block.status();
    std::span<const char> b(block->data.data(), block->data.size());
    if (absl::Status s = CheckBucket(b, layout); !s.ok()) co_return s;
    found = co_await FindIn(op, b, key, hash, gone);
    if (!found.ok()) co_return found.status();
    if (gone) co_return restart;
    if (found->has_value()) co_return Outcome{false, false, std::move(*found)};
    next = NextBlock(b);
  }
  // Absent from the whole chain: valid only if the head did not change meanwhile.
  ++chain_.recheck_reads;
  absl::StatusOr<LockFreeCopy> again = co_await Read(op, head_ptr);
  if (!again.ok()) co_return Stale(again.status()) ? absl::StatusOr<Outcome>(restart) : again.status();
  if (again->version != head_version) co_return restart;
  co_return Outcome{};
}

Task<absl::StatusOr<std::optional<std::string>>> ChainedReader::Lookup(std::string key) {
  ++stats_.lookups;
  const uint64_t hash = HashKey(key);
  const uint32_t p = table_.map->PartitionOf(hash);
  for (uint32_t attempt = 0; attempt <= kMaxRestarts; ++attempt) {
    const PartitionView view = views_[p];
    absl::StatusOr<Outcome> outcome;
    {
      LockFreeOp op = lockFreeStart(ctx_);
      outcome = co_await LookupOnce(op, view, key, hash);
    }
    if (!outcome.ok()) co_return outcome.status();
    if (!outcome->restart) co_return std::move(outcome->value);
    ++stats_.restarts;
    if (outcome->refresh) {
      absl::StatusOr<PartitionView> fresh = co_await Refresh(p);
      if (!fresh.ok() && !Stale(fresh.status())) co_return fresh.status();
    }
  }
  co_return absl::DeadlineExceededError(
      absl::StrFormat("chained: lookup restarted %d times (the table kept changing under it)", kMaxRestarts));
}

}  // namespace farm::kv::chained
