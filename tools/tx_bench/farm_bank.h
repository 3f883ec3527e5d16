// The bank-transfer workload on FaRM, through the public API (farm/api/farm.h): the
// same transfers as redis_bank.h — read two accounts, move 1..10 from one to the other,
// commit; an aborted attempt is retried — run by `inflight` concurrent transfers on
// every worker thread of every node of a local cluster.
//
// Where the accounts are decides the commit path:
//   kSingleMachine  each node transfers between accounts it is the primary of (locks
//                   and validation local, the commit record to the backups);
//   kDistributed    each transfer's two accounts are on two other nodes (two-phase
//                   commit from a coordinator that holds neither).
// Accounts are 16-byte objects: the balance, then padding.
#ifndef FARM_TOOLS_TX_BENCH_FARM_BANK_H_
#define FARM_TOOLS_TX_BENCH_FARM_BANK_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/node/local_cluster.h"
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

// Accounts created by CreateAccounts: per node, the ones it is primary of.
using Accounts = std::vector<std::vector<FatPtr>>;  // [node - 1]

absl::StatusOr<Accounts> CreateAccounts(node::LocalCluster& cluster, uint32_t per_node,
                                        int64_t balance);
// The sum of all balances, read in one read-only transaction on node 1.
absl::StatusOr<int64_t> TotalBalance(node::LocalCluster& cluster, const Accounts& accounts);

// Runs the transfers; the result's totals are read before and after. Internal when the
// total changed; the first error other than Aborted ends the run with that error.
absl::StatusOr<BankRunResult> RunFarmBank(node::LocalCluster& cluster, const Accounts& accounts,
                                          const FarmBankOptions& options);

// Lock-free reads of random accounts (anywhere) by `inflight` concurrent readers per
// worker thread for `duration`: reads per second over the cluster.
absl::StatusOr<double> RunLockFreeReads(node::LocalCluster& cluster, const Accounts& accounts,
                                        uint32_t inflight, absl::Duration duration);

}  // namespace farm::bench

#endif  // FARM_TOOLS_TX_BENCH_FARM_BANK_H_
