// RunTx: a graph operation's transaction, run until it commits or fails for good, with
// randomised exponential backoff between attempts that conflicted.
#ifndef FARM_GRAPH_RUN_TX_H_
#define FARM_GRAPH_RUN_TX_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "graph/graph_tx.h"
#include "kv/shard_map.h"

namespace farm::graph {

struct ClientStats {
  uint64_t transactions = 0;  // committed
  uint64_t retries = 0;       // attempts that conflicted
  uint64_t shipped_pages = 0; // GetLinkList pages read by a shipped transaction
  uint64_t index_builds = 0;  // lists given their indexes (list_index.h)
  uint64_t indexed_ops = 0;   // link operations on indexed lists (attempts)
  uint64_t indexed_reads = 0; // objects they read (tree nodes and blocks; not the vertex)
};

// A transaction that keeps conflicting is tried again (with randomised exponential
// backoff, up to 5 ms) for this long before Aborted is returned. (Below the 5 s RPC
// deadline: a shipped operation answers before its caller gives up.)
inline constexpr absl::Duration kTxRetryBudget = absl::Seconds(4);

namespace run_tx_internal {
inline bool Retryable(const absl::Status& s) { return absl::IsAborted(s) || absl::IsFailedPrecondition(s); }

// Up to 10 µs, doubling, at most 5 ms.
inline absl::Duration Backoff(int attempt) {
  const int64_t cap_us = std::min<int64_t>(5000, int64_t{10} << std::min(attempt, 9));
  const uint64_t salt = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) * 0x9e3779b97f4a7c15ull;
  return absl::Microseconds(1 + static_cast<int64_t>((salt >> 33) % static_cast<uint64_t>(cap_us)));
}
}  // namespace run_tx_internal

// Whether a transaction that failed with `s` at its commit may still have committed, or
// may yet (a single-machine commit's record is never taken back): every error but those
// that say nothing was written — a conflict (Aborted, FailedPrecondition) or a commit
// refused before anything was sent (InvalidArgument). An update it carried must then be
// answered with the error, never run again.
inline bool MayHaveCommitted(const absl::Status& s) {
  return !s.ok() && !run_tx_internal::Retryable(s) && !absl::IsInvalidArgument(s);
}

// Tests only: commits a transaction in place of TxCommit (e.g. commits it, then reports
// an unknown outcome).
using CommitForTest = std::function<Task<absl::Status>(Tx&)>;

// Runs `op(scope)` in transactions until one commits or fails for good; op returns
// Task<StatusOr<T>> and must be re-runnable (it is called again after a conflict). An
// error from the commit of the last attempt is returned as it is (MayHaveCommitted says
// what it means); `commit`, when set and non-empty, commits in place of TxCommit.
template <typename T, typename Op>
Task<absl::StatusOr<T>> RunTx(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats, Op op,
                              const CommitForTest* commit = nullptr) {
  absl::Status last;
  const absl::Time give_up = absl::Now() + kTxRetryBudget;
  int attempt = 0;
  for (; attempt == 0 || absl::Now() < give_up; ++attempt) {
    if (attempt > 0) {
      ++stats->retries;
      co_await SleepFor(ctx, run_tx_internal::Backoff(attempt));
    }
    TxHandle tx = txCreate(ctx);
    TxScope scope{*tx, *index, {}, stats};
    absl::StatusOr<T> result = co_await op(scope);
    if (!result.ok()) {
      txAbort(*tx);
      if (run_tx_internal::Retryable(result.status())) {
        last = result.status();
        continue;
      }
      co_return result.status();
    }
    scope.index_writes.Seal();
    // Not a co_await inside a conditional expression: GCC 12 miscompiles that.
    absl::Status committed;
    if (commit != nullptr && *commit) {
      committed = co_await (*commit)(*tx);
    } else {
      committed = co_await TxCommit(*tx);
    }
    if (committed.ok()) {
      ++stats->transactions;
      co_return result;
    }
    if (!run_tx_internal::Retryable(committed)) co_return committed;
    last = committed;
  }
  co_return absl::AbortedError(absl::StrCat("gave up after ", attempt, " conflicts in ",
                                            absl::FormatDuration(kTxRetryBudget), ": ", last.message()));
}

}  // namespace farm::graph

#endif  // FARM_GRAPH_RUN_TX_H_
