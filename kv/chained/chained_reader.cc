#include "kv/chained/chained_reader.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "kv/chained/bucket_format.h"
#include "kv/layout.h"

namespace farm::kv::chained {
namespace {

bool Stale(const absl::Status& s) { return s.code() == absl::StatusCode::kFailedPrecondition; }

}  // namespace

struct ChainedReader::Lookup {
  ChainedReader* reader = nullptr;  // keeps READ continuations within AnyInvocable's inline storage
  std::string key;
  uint64_t hash = 0;
  uint32_t partition = 0;
  uint32_t restarts = 0;
  GetDone done;
  std::optional<LockFreeOp> op;
  // This attempt: the view it started from, the head whose bucket it reads (in the
  // view's next table or not) and its version, whether a block was read.
  PartitionView view;
  FatPtr head;
  uint64_t head_version = 0;
  bool in_next = false;
  bool chained = false;
  uint32_t blocks = 0;
  Stage stage = Stage::kHead;
  std::string object;  // the bucket object (head or block) being scanned
  uint32_t next_slot = 0;
  std::string value;   // an out-of-line value object
};

ChainedReader::ChainedReader(Context& ctx, ChainedTable table) : ctx_(ctx), table_(std::move(table)) {
  views_.resize(table_.map->size());
  for (size_t p = 0; p < views_.size(); ++p) views_[p].current = table_.map->partition(p).initial;
}

ChainedReader::~ChainedReader() = default;

void ChainedReader::Get(absl::string_view key, GetDone done) {
  Lookup* l = pool_.Take();
  l->reader = this;
  ++stats_.lookups;
  l->key.assign(key.data(), key.size());
  l->hash = HashKey(key);
  l->partition = table_.map->PartitionOf(l->hash);
  l->restarts = 0;
  l->done = std::move(done);
  Attempt(l);
}

void ChainedReader::MultiGet(absl::Span<const std::string> keys, MultiGetDone done) {
  MultiGetByGets(
      ctx_, keys, [this](const std::string& key, GetDone d) { Get(key, std::move(d)); }, std::move(done));
}

void ChainedReader::Attempt(Lookup* l) {
  l->view = views_[l->partition];
  l->op.emplace(lockFreeStart(ctx_));
  l->in_next = false;
  l->chained = false;
  l->blocks = 0;
  const BucketTable& t = *l->view.current;
  l->head = t.Bucket(BucketIndex(l->hash, t.buckets()));
  ++chain_.head_reads;
  Read(l, Stage::kHead, l->head);
}

void ChainedReader::Read(Lookup* l, Stage stage, FatPtr object) {
  l->stage = stage;
  ++stats_.reads;
  lockFreeRead(*l->op, object, [l](absl::StatusOr<LockFreeObject> r) { l->reader->OnRead(l, std::move(r)); });
}

void ChainedReader::OnRead(Lookup* l, absl::StatusOr<LockFreeObject> r) {
  if (!r.ok()) {
    if (!Stale(r.status())) return pool_.Finish(l, r.status());
    // A freed head: its table ended (refresh the view); a freed block or value: the
    // bucket changed (try again).
    return Restart(l, l->stage == Stage::kHead);
  }
  stats_.bytes_read += r->data.size();
  const BucketLayout& layout = table_.map->layout();
  switch (l->stage) {
    case Stage::kValue: {
      absl::StatusOr<std::pair<absl::string_view, absl::string_view>> kv = ParseValueObject(r->data);
      if (!kv.ok()) return pool_.Finish(l, kv.status());
      if (kv->first == l->key) {
        l->value.assign(kv->second.data(), kv->second.size());
        return pool_.Finish(l, std::optional<absl::string_view>(l->value));
      }
      return Scan(l);  // a hash collision: the rest of the object
    }
    case Stage::kRecheck:
      if (r->version != l->head_version) return Restart(l, false);
      return pool_.Finish(l, std::optional<absl::string_view>());
    case Stage::kHead:
    case Stage::kBlock:
      break;
  }
  l->object.assign(r->data.data(), r->data.size());
  const std::span<const char> data(l->object.data(), l->object.size());
  if (absl::Status s = CheckBucket(data, layout); !s.ok()) return pool_.Finish(l, s);
  if (l->stage == Stage::kHead) {
    if (IsMoved(data)) {
      if (l->in_next || l->view.next == nullptr) return Restart(l, true);
      ++chain_.next_table;
      l->in_next = true;
      const BucketTable& t = *l->view.next;
      l->head = t.Bucket(BucketIndex(l->hash, t.buckets()));
      ++chain_.head_reads;
      return Read(l, Stage::kHead, l->head);
    }
    l->head_version = r->version;
  } else {
    l->chained = true;
  }
  l->next_slot = 0;
  Scan(l);
}

void ChainedReader::Scan(Lookup* l) {
  const BucketLayout& layout = table_.map->layout();
  const std::span<const char> data(l->object.data(), l->object.size());
  if (data[0] == 0) return pool_.Finish(l, std::optional<absl::string_view>());  // never written: empty
  for (uint32_t i = l->next_slot; i < layout.slots_per_bucket; ++i) {
    std::span<const char> slot = BucketSlotAt(data, layout, i);
    const SlotKind kind = KindOf(slot);
    if (kind == SlotKind::kEmpty) break;
    if (kind == SlotKind::kInline) {
      if (InlineKey(slot) == l->key) return pool_.Finish(l, std::optional<absl::string_view>(InlineValue(slot)));
      continue;
    }
    if (OutOfLineHash(slot) != l->hash) continue;
    l->next_slot = i + 1;
    ++chain_.value_reads;
    return Read(l, Stage::kValue, OutOfLineValue(slot));
  }
  const FatPtr next = NextBlock(data);
  if (!next.is_null()) {
    if (++l->blocks > (1u << 16)) return pool_.Finish(l, absl::InternalError("chained: a chain that does not end"));
    ++chain_.block_reads;
    return Read(l, Stage::kBlock, next);
  }
  if (!l->chained) return pool_.Finish(l, std::optional<absl::string_view>());  // the head alone: one copy
  // Absent from the whole chain: valid only if the head did not change meanwhile.
  ++chain_.recheck_reads;
  Read(l, Stage::kRecheck, l->head);
}

void ChainedReader::Restart(Lookup* l, bool refresh) {
  ++stats_.restarts;
  l->op.reset();
  if (++l->restarts > kMaxRestarts) {
    return pool_.Finish(l, absl::DeadlineExceededError(absl::StrFormat(
                         "chained: lookup restarted %d times (the table kept changing under it)", kMaxRestarts)));
  }
  if (!refresh) return Attempt(l);
  Spawn(Refresh(l->partition), [this, l](absl::StatusOr<PartitionView> view) {
    if (!view.ok() && !Stale(view.status())) return pool_.Finish(l, view.status());
    Attempt(l);
  });
}

Task<absl::StatusOr<PartitionView>> ChainedReader::Refresh(uint32_t partition) {
  const Partition& part = table_.map->partition(partition);
  LockFreeOp op = lockFreeStart(ctx_);
  ++chain_.root_reads;
  ++stats_.reads;
  absl::StatusOr<LockFreeCopy> root = co_await LockFreeRead(op, part.root);
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
      ++stats_.reads;
      absl::StatusOr<LockFreeCopy> dir = co_await LockFreeRead(op, ref.directory);
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

}  // namespace farm::kv::chained
