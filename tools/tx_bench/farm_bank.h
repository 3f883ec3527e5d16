// The bank-transfer workload on FaRM, through the public API (farm/api/farm.h): the
// same transfers as redis_bank.h — read two accounts, move 1..10 from one to the other,
// commit; an aborted attempt is retried — run by `inflight` concurrent transfers on
// every worker thread of the cluster's runners: every node of an in-process cluster, or
// a compute-only member that joined a cluster of node processes.
//
// Where the accounts are decides the commit path:
//   kSingleMachine  a transfer's two accounts have one primary: the runner's own node
//                   (locks and validation local, the commit record to the backups), or,
//                   for a runner that holds no data, one storage node per thread (the
//                   commit is shipped there and runs as a single-machine commit);
//   kDistributed    each transfer's two accounts are on two other nodes (two-phase
//                   commit from a coordinator that holds neither).
// Accounts are 16-byte objects: the balance, then padding.
#ifndef FARM_TOOLS_TX_BENCH_FARM_BANK_H_
#define FARM_TOOLS_TX_BENCH_FARM_BANK_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/host.h"
#include "tools/tx_bench/redis_bank.h"

namespace farm::bench {

enum class Placement { kSingleMachine, kDistributed };

struct FarmBankOptions {
  uint32_t accounts_per_node = 1000;
  int64_t initial_balance = 1000;
  uint32_t inflight = 4;  // concurrent transfers per worker thread
  absl::Duration duration = absl::Seconds(2);
  Placement placement = Placement::kSingleMachine;
  uint64_t seed = 1;
};

// The machines of a run.
struct BankCluster {
  // Where accounts live: storage[i] holds accounts[i]; `creator` allocates them near
  // `hint` (Addr(): on the creator itself).
  struct Storage {
    Host* creator;
    Addr hint;
  };
  std::vector<Storage> storage;
  // Whose worker threads run transfers and reads; `own` indexes the storage it is
  // primary of (-1: a compute-only runner, holding none).
  struct Runner {
    Host* host;
    int own;
  };
  std::vector<Runner> runners;
};

// Accounts created by CreateAccounts: accounts[i] on storage[i].
using Accounts = std::vector<std::vector<FatPtr>>;

absl::StatusOr<Accounts> CreateAccounts(const BankCluster& cluster, uint32_t per_node, int64_t balance);
// The sum of all balances, read in one read-only transaction on the first runner.
absl::StatusOr<int64_t> TotalBalance(const BankCluster& cluster, const Accounts& accounts);

// Runs the transfers; the result's totals are read before and after. Internal when the
// total changed; the first error other than Aborted ends the run with that error.
absl::StatusOr<BankRunResult> RunFarmBank(const BankCluster& cluster, const Accounts& accounts,
                                          const FarmBankOptions& options);

// Lock-free reads of random accounts (anywhere) by `inflight` concurrent readers per
// worker thread of every runner for `duration`: reads per second.
absl::StatusOr<double> RunLockFreeReads(const BankCluster& cluster, const Accounts& accounts,
                                        uint32_t inflight, absl::Duration duration);

}  // namespace farm::bench

#endif  // FARM_TOOLS_TX_BENCH_FARM_BANK_H_
