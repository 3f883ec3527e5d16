#include "kv/chained/expander.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/log.h"

namespace farm::kv::chained {
namespace {

constexpr absl::Duration kGiveUpAfter = absl::Seconds(30);
constexpr absl::Duration kHoldPoll = absl::Microseconds(50);
// Stop says so on the log each time it has waited this long for the expansions.
constexpr absl::Duration kStopWarnEvery = absl::Seconds(10);

absl::Status Stopped() { return absl::CancelledError("chained: the expander stopped"); }

using TxStep = std::function<Task<absl::Status>(Tx& tx)>;

bool Conflict(const absl::Status& s) {
  return s.code() == absl::StatusCode::kAborted || s.code() == absl::StatusCode::kFailedPrecondition;
}

// Runs `step` in a transaction and commits it, again after a randomized backoff while it
// conflicts (up to kGiveUpAfter).
Task<absl::Status> RetryTx(Context& ctx, TxStep step, std::atomic<uint64_t>* retries) {
  const absl::Time give_up = absl::Now() + kGiveUpAfter;
  absl::Duration backoff = absl::Microseconds(5);
  absl::BitGen rng;
  while (true) {
    TxHandle tx = txCreate(ctx);
    absl::Status s = co_await step(*tx);
    if (s.ok()) {
      s = co_await TxCommit(*tx);
      if (s.ok()) co_return s;
    } else {
      txAbort(*tx);
    }
    if (!Conflict(s)) co_return s;
    if (absl::Now() >= give_up) co_return absl::AbortedError(absl::StrCat("chained expansion gave up: ", s.message()));
    if (retries != nullptr) retries->fetch_add(1);
    tx.reset();
    co_await SleepFor(ctx, absl::Nanoseconds(absl::Uniform<int64_t>(rng, 0, absl::ToInt64Nanoseconds(backoff) + 1)));
    backoff = std::min(backoff * 2, absl::Milliseconds(1));
  }
}

// Allocates `count` zeroed objects of `bytes` next to `hint`, kObjectsPerAllocTx per
// transaction, in order (the order is the table's bucket order).
Task<absl::StatusOr<std::vector<FatPtr>>> AllocateBuckets(Context& ctx, uint32_t bytes, uint64_t count, Addr hint) {
  std::vector<FatPtr> all;
  all.reserve(count);
  while (all.size() < count) {
    const uint64_t n = std::min<uint64_t>(Expander::kObjectsPerAllocTx, count - all.size());
    std::vector<FatPtr> chunk;
    absl::Status s = co_await RetryTx(
        ctx,
        [&chunk, bytes, n, hint](Tx& tx) -> Task<absl::Status> {
          chunk.clear();
          for (uint64_t i = 0; i < n; ++i) {
            absl::StatusOr<ObjBuf*> object = co_await TxAlloc(tx, bytes, hint);
            if (!object.ok()) co_return object.status();
            chunk.push_back((*object)->ptr());
          }
          co_return absl::OkStatus();
        },
        nullptr);
    if (!s.ok()) co_return s;
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  co_return all;
}

// The objects, in order, as runs of adjacent objects at one stride and incarnation.
std::vector<BucketRun> RunsOf(const std::vector<FatPtr>& objects) {
  std::vector<BucketRun> runs;
  Addr last;
  for (const FatPtr& p : objects) {
    if (!runs.empty()) {
      BucketRun& run = runs.back();
      const bool extends = p.addr.region() == run.first.region() && p.incarnation == run.incarnation &&
                           p.addr.offset() > last.offset() &&
                           (run.count == 1 || p.addr.offset() - last.offset() == run.stride);
      if (extends) {
        if (run.count == 1) run.stride = p.addr.offset() - last.offset();
        ++run.count;
        last = p.addr;
        continue;
      }
    }
    runs.push_back(BucketRun{p.addr, p.incarnation, 0, 1});
    last = p.addr;
  }
  return runs;
}

Task<absl::Status> FreeObjects(Context& ctx, std::vector<FatPtr> objects) {
  for (size_t at = 0; at < objects.size(); at += Expander::kObjectsPerAllocTx) {
    const size_t end = std::min(objects.size(), at + Expander::kObjectsPerAllocTx);
    absl::Status s = co_await RetryTx(
        ctx,
        [&objects, at, end](Tx& tx) -> Task<absl::Status> {
          for (size_t i = at; i < end; ++i) {
            if (absl::Status st = txFree(tx, objects[i]); !st.ok()) co_return st;
          }
          co_return absl::OkStatus();
        },
        nullptr);
    if (!s.ok()) co_return s;
  }
  co_return absl::OkStatus();
}

}  // namespace

Expander::Expander(ChainedTable table, ExpanderOptions options) : table_(std::move(table)), options_(std::move(options)) {
  state_.reserve(table_.map->size());
  for (size_t p = 0; p < table_.map->size(); ++p) {
    state_.push_back(std::make_unique<PartitionState>());
    state_.back()->buckets = table_.map->partition(p).initial->buckets();
  }
}

Expander::~Expander() { Stop(); }

bool Expander::Enter() {
  MutexLock lock(&mu_);
  if (stopping_.load()) return false;
  ++active_;
  return true;
}

void Expander::Leave() {
  MutexLock lock(&mu_);
  if (--active_ == 0) idle_.SignalAll();
}

void Expander::Stop() {
  MutexLock lock(&mu_);
  stopping_.store(true);
  while (!idle_.WaitFor(&mu_, kStopWarnEvery, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return active_ == 0; })) {
    FARM_LOG(kWarning, "chained: stopping: still waiting for %d expansions to end", active_);
  }
}

ExpansionStats Expander::stats() const {
  return ExpansionStats{expansions_.load(), migrated_.load(), retries_.load(), freed_tables_.load()};
}

bool Expander::Due(uint32_t p) const {
  const PartitionState& st = *state_[p];
  return static_cast<double>(st.pairs.load()) > options_.max_load * static_cast<double>(st.buckets.load());
}

void Expander::Note(Context& ctx, uint32_t p, int delta) {
  state_[p]->pairs.fetch_add(delta);
  if (!options_.automatic || !Due(p) || state_[p]->running.exchange(true)) return;
  if (!Enter()) {
    state_[p]->running = false;
    return;
  }
  Spawn(Run(ctx, p), [this, &ctx, p](absl::Status s) {
    if (!s.ok() && !stopping()) {
      FARM_LOG(kWarning, "node %u: chained partition %u: expansion failed: %s", ctx.self(), p, s.ToString());
    }
    state_[p]->running = false;
    Leave();
  });
}

void Expander::Expand(Context& ctx, uint32_t p, Done<absl::Status> done) {
  if (!Enter()) {
    ctx.Defer([done = std::move(done)]() mutable { done(Stopped()); });
    return;
  }
  if (state_[p]->running.exchange(true)) {
    Leave();
    ctx.Defer([done = std::move(done)]() mutable {
      done(absl::FailedPreconditionError("chained: this partition is expanding already"));
    });
    return;
  }
  Spawn(Run(ctx, p), [this, p, done = std::move(done)](absl::Status s) mutable {
    state_[p]->running = false;
    done(s);
    Leave();
  });
}

Task<absl::Status> Expander::Run(Context& ctx, uint32_t p) {
  do {
    if (stopping()) co_return Stopped();
    if (absl::Status s = co_await Start(ctx, p); !s.ok()) co_return s;
    if (absl::Status s = co_await Migrate(ctx, p); !s.ok()) co_return s;
    if (stopping()) co_return Stopped();
    if (absl::Status s = co_await Finish(ctx, p); !s.ok()) co_return s;
  } while (options_.automatic && Due(p));
  co_return absl::OkStatus();
}

Task<absl::Status> Expander::Start(Context& ctx, uint32_t p) {
  const ChainedTable& table = table_;
  TxTables seen;
  absl::Status read = co_await RetryTx(
      ctx,
      [&seen, &table, p](Tx& tx) -> Task<absl::Status> {
        absl::StatusOr<TxTables> t = co_await ReadTablesInTx(tx, table, p);
        if (!t.ok()) co_return t.status();
        seen = *t;
        co_return absl::OkStatus();
      },
      nullptr);
  if (!read.ok()) co_return read;
  if (seen.state.expanding()) co_return absl::OkStatus();  // resume it
  const uint64_t n = seen.current->buckets();
  const uint32_t bytes = table.map->layout().bucket_bytes();
  const FatPtr root = table.map->partition(p).root;
  FARM_LOG(kInfo, "node %u: chained partition %u: expanding %llu -> %llu buckets", ctx.self(), p,
           static_cast<unsigned long long>(n), static_cast<unsigned long long>(2 * n));
  absl::StatusOr<std::vector<FatPtr>> objects = co_await AllocateBuckets(ctx, bytes, 2 * n, root.addr);
  if (!objects.ok()) co_return objects.status();
  absl::StatusOr<BucketTable> next = BucketTable::Create(RunsOf(*objects), bytes);
  if (!next.ok()) co_return next.status();
  bool raced = false;
  absl::Status started = co_await RetryTx(
      ctx,
      [&table, &next, &raced, p, n, root](Tx& tx) -> Task<absl::Status> {
        absl::StatusOr<TxTables> t = co_await ReadTablesInTx(tx, table, p);
        if (!t.ok()) co_return t.status();
        if (t->state.expanding() || t->current->buckets() != n) {
          raced = true;
          co_return absl::OkStatus();
        }
        absl::StatusOr<ObjBuf*> dir = co_await TxAlloc(tx, DirectoryBytes(next->runs().size()), root.addr);
        if (!dir.ok()) co_return dir.status();
        next->Encode((*dir)->data());
        if (absl::Status s = txWrite(tx, *dir); !s.ok()) co_return s;
        RootState state = t->state;
        state.current.buckets = n;
        state.next = TableRef{(*dir)->ptr(), 2 * n};
        WriteRoot(t->root->data(), state);
        co_return txWrite(tx, t->root);
      },
      nullptr);
  if (!started.ok() || raced) {
    (void)co_await FreeObjects(ctx, std::move(*objects));
    co_return started.ok() ? absl::AbortedError("chained: another expansion started meanwhile") : started;
  }
  co_return absl::OkStatus();
}

Task<absl::Status> Expander::Migrate(Context& ctx, uint32_t p) {
  const ChainedTable& table = table_;
  uint64_t n = 0;
  for (uint64_t b = 0; n == 0 || b < n; ++b) {
    if (stopping()) co_return Stopped();
    if (n != 0 && options_.hold) {
      while (options_.hold(p, b, n)) {
        if (stopping()) co_return Stopped();
        co_await SleepFor(ctx, kHoldPoll);
      }
    }
    bool moved = false;
    absl::Status s = co_await RetryTx(
        ctx,
        [&table, &n, &moved, p, b](Tx& tx) -> Task<absl::Status> {
          absl::StatusOr<TxTables> t = co_await ReadTablesInTx(tx, table, p);
          if (!t.ok()) co_return t.status();
          if (!t->state.expanding()) co_return absl::FailedPreconditionError("chained: not expanding");
          n = t->current->buckets();
          absl::StatusOr<bool> m = co_await MigrateBucketInTx(tx, table, *t, b);
          if (!m.ok()) co_return m.status();
          moved = *m;
          co_return absl::OkStatus();
        },
        &retries_);
    if (!s.ok()) co_return s;
    if (moved) migrated_.fetch_add(1);
  }
  co_return absl::OkStatus();
}

Task<absl::Status> Expander::Finish(Context& ctx, uint32_t p) {
  const ChainedTable& table = table_;
  TableRef old_ref;
  std::shared_ptr<const BucketTable> old;
  uint64_t buckets = 0;
  absl::Status s = co_await RetryTx(
      ctx,
      [&table, &old_ref, &old, &buckets, p](Tx& tx) -> Task<absl::Status> {
        absl::StatusOr<TxTables> t = co_await ReadTablesInTx(tx, table, p);
        if (!t.ok()) co_return t.status();
        if (!t->state.expanding()) co_return absl::FailedPreconditionError("chained: not expanding");
        old_ref = t->state.current;
        old = t->current;
        buckets = t->next->buckets();
        RootState state = t->state;
        ++state.expansions;
        state.current = state.next;
        state.next = TableRef{};
        WriteRoot(t->root->data(), state);
        co_return txWrite(tx, t->root);
      },
      nullptr);
  if (!s.ok()) co_return s;
  state_[p]->buckets = buckets;
  expansions_.fetch_add(1);
  FARM_LOG(kInfo, "node %u: chained partition %u: now %llu buckets", ctx.self(), p,
           static_cast<unsigned long long>(buckets));
  if (old_ref.directory.is_null()) co_return absl::OkStatus();  // the initial table stays
  std::vector<FatPtr> objects;
  objects.reserve(old->buckets() + 1);
  for (uint64_t b = 0; b < old->buckets(); ++b) objects.push_back(old->Bucket(b));
  objects.push_back(old_ref.directory);
  if (absl::Status freed = co_await FreeObjects(ctx, std::move(objects)); !freed.ok()) co_return freed;
  freed_tables_.fetch_add(1);
  co_return absl::OkStatus();
}

}  // namespace farm::kv::chained
