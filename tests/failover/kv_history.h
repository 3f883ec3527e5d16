// KvHistory: a linearizability workload over the kv service's RESP ports while nodes
// fail: clients GET and SET ... GET a few keys (values unique per write), each through
// some live node, and every key's whole history must be linearizable
// (tests/kv/register_checker.h). An update refused before it ran (kv_history.cc lists
// the errors that say so) is left out; one whose reply never came or left its outcome
// unknown is pending: it took effect once within a bound after it started (nodes are
// SIGKILLed, not cut off: what a node sent is delivered or lost with it), or never — the
// checker finds which order fits. After an error its client moves to another live node.
#ifndef FARM_TESTS_FAILOVER_KV_HISTORY_H_
#define FARM_TESTS_FAILOVER_KV_HISTORY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "farm/base/mutex.h"
#include "tests/kv/register_checker.h"

namespace farm::testing {

class KvHistory {
 public:
  // `live_ports`: the RESP ports of the nodes alive now (called from the clients'
  // threads; must be thread-safe). Starts `clients` client threads on `keys` keys.
  KvHistory(std::function<std::vector<uint16_t>()> live_ports, int keys, int clients);
  ~KvHistory() { Stop(); }

  // Stops the clients (each finishes its operation in flight). Idempotent.
  void Stop();
  // After Stop: OK when every key's history is linearizable, else the first key's
  // violation. `operations` gets how many were checked and `pending` how many of them had
  // no known outcome.
  absl::Status Check(size_t* operations, size_t* pending);

 private:
  void Run(int client);

  const std::function<std::vector<uint16_t>()> live_ports_;
  const int keys_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  Mutex mu_;
  std::vector<std::vector<kv::testing::RegisterOp>> history_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::testing

#endif  // FARM_TESTS_FAILOVER_KV_HISTORY_H_
