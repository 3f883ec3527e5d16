// The bank-transfer workload on Redis: the transaction benchmark's baseline.
//
// Accounts are keys "acct:0" .. "acct:<accounts-1>" holding decimal balances. Each of
// `clients` threads has its own connection and repeats, until `duration` has passed, a
// transfer of 1..10 from one uniformly chosen account to another, as optimistic
// WATCH/MULTI/EXEC in two round trips:
//   1. WATCH a b; MGET a b                     (pipelined)
//   2. MULTI; SET a (a-amt); SET b (b+amt); EXEC  (pipelined)
// EXEC answers nil when another client changed a or b after the WATCH: the attempt is
// counted as aborted and the transfer retried with a fresh attempt. Balances may go
// negative. A transfer still unfinished when the duration ends is dropped.
//
// RunRedisBank overwrites acct:0 .. acct:<accounts-1> on the server and leaves every
// other key alone. It blocks the calling thread for about `duration` and is safe to call
// from several threads (each call uses its own connections).
#ifndef FARM_TOOLS_TX_BENCH_REDIS_BANK_H_
#define FARM_TOOLS_TX_BENCH_REDIS_BANK_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace farm::bench {

struct RedisBankOptions {
  uint16_t port = 0;         // of a running redis-server on 127.0.0.1
  uint32_t accounts = 1000;  // at least 2
  int64_t initial_balance = 1000;
  uint32_t clients = 8;  // threads, one connection each; at least 1
  absl::Duration duration = absl::Seconds(3);
  uint64_t seed = 1;  // client thread t draws from a generator seeded seed + t
};

struct BankRunResult {
  uint64_t committed = 0;
  uint64_t aborted = 0;  // attempts whose EXEC answered nil (a WATCHed key changed)
  double seconds = 0;    // from the clients' common start until the last one stopped
  // Latency of each committed transfer's final attempt, from sending WATCH to the EXEC
  // reply.
  double p50_us = 0, p99_us = 0, mean_us = 0;
  // Sum of all balances after loading and after the run; RunRedisBank fails when they
  // differ, so in a returned result they are equal.
  int64_t total_before = 0, total_after = 0;
};

// Loads the accounts, runs the clients, and checks that the total is unchanged.
// InvalidArgument for bad options; Unavailable when the server cannot be reached or a
// connection fails; Internal for a reply of an unexpected type or an error reply, and
// when the total changed (naming both sums).
absl::StatusOr<BankRunResult> RunRedisBank(const RedisBankOptions& options);

}  // namespace farm::bench

#endif  // FARM_TOOLS_TX_BENCH_REDIS_BANK_H_
