#include "kv/linear/linear_reader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "kv/layout.h"
#include "kv/linear/slot_format.h"

namespace farm::kv::linear {

struct LinearReader::Lookup {
  LinearReader* reader = nullptr;  // keeps READ continuations within AnyInvocable's inline storage
  std::string key;
  uint64_t hash = 0;
  uint64_t home = 0;
  uint64_t next = 0;    // the table index of the next slot to READ
  uint64_t probed = 0;  // slots examined from the home on
  uint32_t r = 0;       // this lookup's read size
  uint32_t restarts = 0;
  bool ended = false;   // an empty slot or the probe bound was reached
  GetDone done;
  std::optional<LockFreeOp> op;
  // This round: its READs, their groups' copies in probe order, the slots they hold
  // from `next` on, the READs not yet completed and the first error.
  std::vector<GroupRun> runs;
  std::vector<char> copies;
  uint64_t held = 0;
  size_t pending = 0;
  absl::Status error;
  std::vector<FatPtr> candidates;  // out-of-line values whose hash matches, to check
  size_t next_candidate = 0;
};

LinearReader::LinearReader(Context& ctx, std::shared_ptr<const LinearTable> table)
    : ctx_(ctx), table_(std::move(table)), map_(*table_->map), alive_(std::make_shared<LinearReader*>(this)) {}

LinearReader::~LinearReader() = default;  // drops alive_: samples still in flight find it expired

void LinearReader::Get(absl::string_view key, GetDone done) {
  Lookup* l = pool_.Take();
  l->reader = this;
  ++stats_.lookups;
  l->key.assign(key.data(), key.size());
  l->hash = HashKey(key);
  l->home = map_.HomeOf(l->hash);
  l->next = l->home;
  l->probed = 0;
  l->ended = false;
  l->restarts = 0;
  l->r = read_size();
  l->candidates.clear();
  l->next_candidate = 0;
  l->done = std::move(done);
  l->op.emplace(lockFreeStart(ctx_));
  if (++since_sample_ >= kSampleEvery && !sampling_) {
    since_sample_ = 0;
    sampling_ = true;
    IssueSample([this](absl::Status) { sampling_ = false; });
  }
  StartRound(l);
}

void LinearReader::StartRound(Lookup* l) {
  const uint32_t group_bytes = map_.layout().group_bytes();
  const uint64_t want = std::min<uint64_t>(l->r, map_.max_probe() - l->probed);
  l->held = map_.PlanReads(l->next, want, l->runs);
  size_t groups = 0;
  for (const GroupRun& run : l->runs) groups += run.count;
  l->copies.resize(groups * group_bytes);
  l->pending = l->runs.size();
  l->error = absl::OkStatus();
  ++probe_.rounds;
  probe_.slots_read += l->held;
  for (size_t i = 0; i < l->runs.size(); ++i) {
    const GroupRun& run = l->runs[i];
    std::array<FatPtr, kMaxGroupsPerRead> objects;
    for (uint32_t j = 0; j < run.count; ++j) objects[j] = map_.Group(GroupRef{run.shard, run.first + j});
    ++stats_.reads;
    stats_.bytes_read += uint64_t{run.count} * group_bytes;
    lockFreeReadMany(*l->op, std::span<const FatPtr>(objects.data(), run.count),
                     [l, i](absl::StatusOr<std::span<const LockFreeObject>> r) { l->reader->OnRead(l, i, std::move(r)); });
  }
}

void LinearReader::OnRead(Lookup* l, size_t run, absl::StatusOr<std::span<const LockFreeObject>> r) {
  if (!r.ok()) {
    if (l->error.ok()) l->error = r.status();
  } else {
    const uint32_t group_bytes = map_.layout().group_bytes();
    size_t first = 0;
    for (size_t i = 0; i < run; ++i) first += l->runs[i].count;
    for (size_t j = 0; j < r->size(); ++j) {
      std::span<const char> data = (*r)[j].data;
      std::memcpy(l->copies.data() + (first + j) * group_bytes, data.data(), std::min<size_t>(data.size(), group_bytes));
    }
  }
  if (--l->pending > 0) return;
  if (!l->error.ok()) return pool_.Finish(l, l->error);  // groups are never freed: any error is one
  Scan(l);
}

void LinearReader::Scan(Lookup* l) {
  const SlotLayout& layout = map_.layout();
  const uint32_t g = layout.slots_per_group;
  const std::span<const char> copies(l->copies.data(), l->copies.size());
  const uint64_t first = map_.SlotInGroup(l->next);  // the round's first slot in its first group
  uint64_t examined = 0;
  for (; examined < l->held && l->probed < map_.max_probe(); ++examined) {
    const uint64_t pos = first + examined;
    const std::span<const char> group = copies.subspan((pos / g) * layout.group_bytes(), layout.group_bytes());
    if (examined == 0 || pos % g == 0) {
      if (absl::Status s = CheckGroup(group, layout); !s.ok()) return pool_.Finish(l, s);
    }
    const std::span<const char> slot = GroupSlot(group, layout, static_cast<uint32_t>(pos % g));
    if (absl::Status s = CheckLinearSlot(slot, layout); !s.ok()) return pool_.Finish(l, s);
    ++l->probed;
    const Kind kind = KindOfSlot(slot);
    if (kind == Kind::kEmpty) {
      l->ended = true;
      ++examined;
      break;
    }
    if (kind == Kind::kInline) {
      if (InlineKey(slot) == l->key) {
        probe_.slots_probed += examined + 1;
        return pool_.Finish(l, std::optional<absl::string_view>(InlineValue(slot)));
      }
    } else if (kind == Kind::kOutOfLine && OutOfLineHash(slot) == l->hash) {
      l->candidates.push_back(OutOfLineValue(slot));
    }
  }
  probe_.slots_probed += examined;
  if (l->probed >= map_.max_probe()) l->ended = true;  // invariant 4: the key is not beyond
  if (!l->ended) l->next = map_.Advance(l->next, l->held);
  Continue(l);
}

// Checks the queued candidates, then READs the next slots, then reports "no such key".
void LinearReader::Continue(Lookup* l) {
  if (l->next_candidate < l->candidates.size()) {
    const FatPtr value = l->candidates[l->next_candidate++];
    ++stats_.reads;
    ++probe_.value_reads;
    stats_.bytes_read += value.size;
    return lockFreeRead(*l->op, value, [this, l](absl::StatusOr<LockFreeObject> r) { OnValue(l, std::move(r)); });
  }
  if (!l->ended) return StartRound(l);
  pool_.Finish(l, std::optional<absl::string_view>());
}

void LinearReader::OnValue(Lookup* l, absl::StatusOr<LockFreeObject> r) {
  if (!r.ok()) {
    if (r.status().code() == absl::StatusCode::kFailedPrecondition) return Restart(l, "value replaced");
    return pool_.Finish(l, r.status());
  }
  absl::StatusOr<std::pair<absl::string_view, absl::string_view>> kv = ParseValueObject(r->data);
  if (!kv.ok()) return pool_.Finish(l, kv.status());
  if (kv->first == l->key) return pool_.Finish(l, std::optional<absl::string_view>(kv->second));
  Continue(l);  // another key with the same hash
}

void LinearReader::Restart(Lookup* l, absl::string_view why) {
  ++stats_.restarts;
  if (++l->restarts > kMaxRestarts) {
    return pool_.Finish(l, absl::DeadlineExceededError(absl::StrFormat("lookup restarted %d times (last: %s)",
                                                                 kMaxRestarts, why)));
  }
  // A new lock-free operation: the old one's memory guarantees are not needed any more.
  l->op.emplace(lockFreeStart(ctx_));
  l->next = l->home;
  l->probed = 0;
  l->ended = false;
  l->candidates.clear();
  l->next_candidate = 0;
  StartRound(l);
}

void LinearReader::MultiGet(absl::Span<const std::string> keys, MultiGetDone done) {
  MultiGetByGets(
      ctx_, keys, [this](const std::string& key, GetDone d) { Get(key, std::move(d)); }, std::move(done));
}

// One group at random, its non-empty slots recorded.
void LinearReader::IssueSample(Done<absl::Status> done) {
  const uint64_t index = absl::Uniform<uint64_t>(rng_, 0, map_.slots());
  const FatPtr group = map_.Group(map_.GroupOf(index));
  ++stats_.reads;
  ++probe_.sample_reads;
  stats_.bytes_read += group.size;
  auto op = std::make_shared<LockFreeOp>(lockFreeStart(ctx_));
  // Periodic samples are the reader's own: it may be gone when one completes.
  std::weak_ptr<LinearReader*> alive = alive_;
  lockFreeRead(*op, group, [alive, op, done = std::move(done)](absl::StatusOr<LockFreeObject> r) mutable {
    if (alive.expired()) return;
    LinearReader* self = *alive.lock();
    if (!r.ok()) return done(r.status());
    const SlotLayout& layout = self->map_.layout();
    if (absl::Status s = CheckGroup(r->data, layout); !s.ok()) return done(s);
    uint32_t non_empty = 0;
    for (uint32_t i = 0; i < layout.slots_per_group; ++i) {
      non_empty += KindOfSlot(GroupSlot(r->data, layout, i)) != Kind::kEmpty;
    }
    self->load_.Record(non_empty, layout.slots_per_group);
    done(absl::OkStatus());
  });
}

struct LinearReader::SampleBatch {
  uint32_t unissued;
  uint32_t pending;
  absl::Status error;
  Done<absl::Status> done;
};

void LinearReader::IssueFromBatch(std::shared_ptr<SampleBatch> batch) {
  --batch->unissued;
  IssueSample([this, batch](absl::Status s) {
    if (!s.ok() && batch->error.ok()) batch->error = s;
    if (batch->unissued > 0) IssueFromBatch(batch);
    if (--batch->pending == 0) batch->done(batch->error);
  });
}

void LinearReader::SampleLoad(uint32_t groups, Done<absl::Status> done) {
  // At most kSampleWindow samples in flight: a refresh of thousands of groups is paced by
  // its own completions rather than handed to the reader (and the fabric) at once.
  constexpr uint32_t kSampleWindow = 16;
  auto batch = std::make_shared<SampleBatch>(SampleBatch{groups, groups, absl::OkStatus(), std::move(done)});
  if (groups == 0) {
    ctx_.Defer([batch] { batch->done(absl::OkStatus()); });
    return;
  }
  for (uint32_t i = 0; i < std::min(groups, kSampleWindow); ++i) IssueFromBatch(batch);
}

}  // namespace farm::kv::linear
