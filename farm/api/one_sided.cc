// The raw facet (one_sided.h) over the thread's tx::OneSidedAccess; allocation and free
// through transactions of their own (kAllocRaw, kFreeRaw: tx/log_record.h).
#include "farm/api/one_sided.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "alloc/end_of_epoch.h"
#include "farm/base/log.h"
#include "membership/placement.h"
#include "tx/one_sided.h"
#include "tx/transaction.h"

namespace farm {
namespace api_internal {
tx::ThreadContext& NodeThread(Context& ctx);  // farm.cc
}  // namespace api_internal

namespace {

using api_internal::NodeThread;

// Aborts of rawAlloc's and rawFree's own transactions (a configuration change, a slot
// another transaction had read) are retried this often before the error is returned.
constexpr int kMaxAttempts = 8;

tx::OneSidedAccess& Access(tx::ThreadContext& t) {
  tx::OneSidedAccess* access = t.one_sided();
  if (access == nullptr) {
    FARM_LOG(kError, "farm API: a one-sided op on a node thread without one-sided access");
    std::abort();
  }
  return *access;
}

FatPtr AsFatPtr(RawPtr p) { return FatPtr{p.addr, p.size, p.incarnation}; }

void AllocAttempt(tx::ThreadContext* t, uint32_t size, Addr hint, int attempt,
                  std::shared_ptr<Cont<absl::StatusOr<RawPtr>>> cont) {
  std::shared_ptr<tx::Transaction> tx = tx::Transaction::Create(t);
  tx->AllocRaw(size, hint, [t, size, hint, attempt, tx, cont](absl::StatusOr<TxObject*> o) mutable {
    if (!o.ok()) {
      tx->Abort();
      if (absl::IsAborted(o.status()) && attempt < kMaxAttempts) {
        return AllocAttempt(t, size, hint, attempt + 1, std::move(cont));
      }
      return (*cont)(o.status());
    }
    const FatPtr p = (*o)->ptr();
    tx->Commit([t, size, hint, attempt, tx, p, cont](const absl::Status& s) mutable {
      if (s.ok()) return (*cont)(RawPtr{p.addr, p.size, p.incarnation});
      if (absl::IsAborted(s) && attempt < kMaxAttempts) {
        return AllocAttempt(t, size, hint, attempt + 1, std::move(cont));
      }
      (*cont)(s);
    });
  });
}

void FreeAttempt(tx::ThreadContext* t, RawPtr object, int attempt, std::shared_ptr<Cont<absl::Status>> cont) {
  std::shared_ptr<tx::Transaction> tx = tx::Transaction::Create(t);
  if (absl::Status s = tx->FreeRaw(AsFatPtr(object)); !s.ok()) {
    tx->Abort();
    t->Defer([s, cont] { (*cont)(s); });
    return;
  }
  tx->Commit([t, object, attempt, tx, cont](const absl::Status& s) mutable {
    if (absl::IsAborted(s) && attempt < kMaxAttempts) {
      // Another commit held the object (a second rawFree) or the configuration moved.
      t->RunAfter(absl::Microseconds(100) * attempt,
                  [t, object, attempt, cont]() mutable { FreeAttempt(t, object, attempt + 1, std::move(cont)); });
      return;
    }
    (*cont)(s);
  });
}

}  // namespace

void rawAlloc(Context& ctx, uint32_t size, Addr hint, Cont<absl::StatusOr<RawPtr>> cont) {
  tx::ThreadContext& t = NodeThread(ctx);
  auto shared = std::make_shared<Cont<absl::StatusOr<RawPtr>>>(std::move(cont));
  if (size == 0) {
    ctx.Defer([shared] { (*shared)(absl::InvalidArgumentError("rawAlloc of 0 bytes")); });
    return;
  }
  AllocAttempt(&t, size, hint, 1, std::move(shared));
}

// rawFree's end-of-epoch round waits for every bracket (transaction, LockFreeOp,
// one-sided op) open on every thread, this one included: it starts once none is open
// here. Other work of the thread (its sessions' lookups and transactions) ends on its
// own; a caller holding its own bracket across rawFree would wait forever, so after
// kFreeBracketWait with one open it is FailedPrecondition. Checked with a backoff from
// 10 us to 1 ms: bounded polling.
constexpr absl::Duration kFreeBracketWait = absl::Seconds(1);

void FreeOutsideBrackets(Context& ctx, RawPtr object, std::shared_ptr<Cont<absl::Status>> shared,
                         absl::Time deadline, absl::Duration backoff);

void rawFree(Context& ctx, RawPtr object, Cont<absl::Status> cont) {
  auto shared = std::make_shared<Cont<absl::Status>>(std::move(cont));
  // Always from the loop: the continuation never runs inside the call.
  ctx.Defer([&ctx, object, shared] {
    FreeOutsideBrackets(ctx, object, shared, absl::Now() + kFreeBracketWait, absl::Microseconds(10));
  });
}

void FreeOutsideBrackets(Context& ctx, RawPtr object, std::shared_ptr<Cont<absl::Status>> shared,
                         absl::Time deadline, absl::Duration backoff) {
  tx::ThreadContext& t = NodeThread(ctx);
  if (t.allocator().epoch().inside()) {
    if (absl::Now() >= deadline) {
      return (*shared)(absl::FailedPreconditionError(absl::StrFormat(
          "rawFree of %s: a transaction or LockFreeOp stayed open on this thread for %s (its end-of-epoch round "
          "would wait for it): end yours before calling rawFree",
          object.ToString(), absl::FormatDuration(kFreeBracketWait))));
    }
    ctx.RunAfter(backoff, [&ctx, object, shared, deadline, backoff] {
      FreeOutsideBrackets(ctx, object, shared, deadline, std::min(backoff * 2, absl::Milliseconds(1)));
    });
    return;
  }
  tx::ThreadContext* tp = &t;
  Access(t).MarkDying(object, [tp, object, shared](absl::Status dying) mutable {
    if (!dying.ok()) return (*shared)(std::move(dying));
    // Every op that may have validated the object while it was live ends before the
    // round completes (tx/one_sided.h, invariant 3).
    std::shared_ptr<const membership::Placement> placement = tp->placement();
    if (placement == nullptr) return (*shared)(absl::UnavailableError("rawFree: no configuration yet"));
    std::vector<NodeId> members = placement->all_members();  // compute-only members run ops too
    alloc::RunEndOfEpochRound(tp->msg(), tp->self(), tp->allocator().allocator().epochs(), std::move(members),
                              [tp, object, shared](absl::Status round) mutable {
                                if (!round.ok()) {
                                  return (*shared)(absl::UnavailableError(absl::StrFormat(
                                      "rawFree of %s: the end-of-epoch round failed (%s); the object stays dying "
                                      "(ops on it fail): call rawFree again",
                                      object.ToString(), round.message())));
                                }
                                FreeAttempt(tp, object, 1, std::move(shared));
                              });
  });
}

void rawRead(Context& ctx, RawPtr object, uint32_t offset, uint32_t length, Cont<absl::StatusOr<RawBytes>> cont) {
  Access(NodeThread(ctx)).Read(object, offset, length,
                               [cont = std::move(cont)](absl::StatusOr<tx::OneSidedRead> r) mutable {
                                 if (!r.ok()) return cont(r.status());
                                 cont(RawBytes{r->data, r->torn});
                               });
}

void rawWrite(Context& ctx, RawPtr object, uint32_t offset, std::span<const char> bytes, Cont<absl::Status> cont) {
  Access(NodeThread(ctx)).Write(object, offset, bytes, std::move(cont));
}

void rawCas64(Context& ctx, RawPtr object, uint32_t offset, uint64_t expected, uint64_t desired,
              Cont<absl::StatusOr<uint64_t>> cont) {
  Access(NodeThread(ctx)).CompareSwap(object, offset, expected, desired, std::move(cont));
}

void rawFetchAdd64(Context& ctx, RawPtr object, uint32_t offset, uint64_t delta, Cont<absl::StatusOr<uint64_t>> cont) {
  Access(NodeThread(ctx)).FetchAdd(object, offset, delta, std::move(cont));
}

RawStats rawStats(Context& ctx) {
  const tx::OneSidedStats& s = Access(NodeThread(ctx)).stats();
  RawStats out;
  out.reads = s.reads;
  out.writes = s.writes;
  out.compare_swaps = s.compare_swaps;
  out.fetch_adds = s.fetch_adds;
  out.local = s.local;
  out.remote = s.remote;
  out.validations = s.validations;
  out.capability_fetches = s.capability_fetches;
  out.bytes_read = s.bytes_read;
  out.bytes_written = s.bytes_written;
  out.failed = s.failed;
  return out;
}

}  // namespace farm
