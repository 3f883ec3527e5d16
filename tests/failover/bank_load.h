// The bank workload of failover_process_test: account objects, the transfer
// transaction, and Load — kChains sequential transfer clients on a compute-only
// member's threads that keep, per chain, what they know of their transfers (ChainBook)
// and measure how they recover from a kill.
//
// The account layout and transfer transaction follow
// tests/durability/kill_all_process_test.cc.
#ifndef FARM_TESTS_FAILOVER_BANK_LOAD_H_
#define FARM_TESTS_FAILOVER_BANK_LOAD_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "farm/base/mutex.h"
#include "farm/node/node.h"

namespace farm::failover_test {

inline constexpr int kChains = 3;  // concurrent transfer clients, one member thread each
inline constexpr absl::Duration kNoCompletion = absl::Seconds(30);  // a transaction that never ends

// An account object: balance, then per chain the sequence number of the last transfer
// of that chain that touched it.
struct Account {
  int64_t balance = 0;
  int64_t last[kChains] = {};
};
static_assert(sizeof(Account) == 8 * (1 + kChains));

std::string Encode(const Account& a);
Account Decode(const char* bytes, size_t size);

// One transaction on the member's thread t: reads `accounts`, applies `change` to their
// values, writes every one back and commits. A read's error or the commit's status
// (Aborted: a conflict); nullopt when it did not complete within `timeout` or
// `*abandon` turned true first (it may still complete later).
using Change = std::function<void(std::vector<Account>&)>;
std::optional<absl::Status> ReadModifyWrite(node::Node& member, size_t t,
                                            std::vector<FatPtr> accounts, Change change,
                                            absl::Duration timeout = kNoCompletion,
                                            const std::atomic<bool>* abandon = nullptr);

// A status for a tally: its code and message with every token that holds a digit (ids,
// addresses, durations) replaced by '#', so that failures of one kind count together.
std::string Kind(const absl::Status& s);
// A duration as "1.23 s", for messages.
std::string Secs(absl::Duration d);

// Per chain, across rounds: what its client knows of its transfers. Written by the
// chain's thread while a Load runs, read by the test once it stopped.
struct ChainBook {
  std::map<size_t, int64_t> acked;              // account -> last acknowledged transfer touching it
  std::map<size_t, std::set<int64_t>> unknown;  // account -> later transfers of unknown outcome
  int64_t acked_transfers = 0;
  int64_t seq = 0;
};

// The round's kill, as the chains see it.
struct Kill {
  absl::Time at;
  std::set<size_t> primary;   // accounts whose region the victim was primary of
  std::set<size_t> affected;  // accounts whose region the victim held a copy of
};

// kChains transfer chains, chain c on the member's thread c, each running one transfer
// at a time between two random accounts until Stop; a failed transfer is tried again
// with a fresh sequence number. Each chain keeps its ChainBook.
class Load {
 public:
  Load(node::Node& member, const std::vector<FatPtr>& accounts, std::vector<ChainBook>& books,
       int round);
  // Also on a failed test: stops waiting for transactions in flight.
  ~Load();

  // From now on the chains measure how they recover from `kill`.
  void Killed(Kill kill);

  // Waits until every chain has committed a transfer it started after the kill that
  // touches an account the victim held a copy of (any account if it held none), or a
  // chain is stuck, or `deadline`. True when every chain recovered.
  bool WaitRecovered(absl::Time deadline);

  // Lets each chain finish its transfer in flight, then joins them. Idempotent.
  void Stop();

  // Times from the kill: to the first commit, the first on an account the victim was
  // primary of, the last chain's recovery (WaitRecovered).
  struct Times {
    std::optional<absl::Duration> first_commit, first_on_primary, every_chain;
  };
  Times Measured();

  // What the chains went through since the kill, for messages: per chain its state and
  // its failures by kind.
  std::string Describe();

 private:
  struct Failures {  // of one kind
    int count = 0;
    absl::Time first, last;
    std::string example;  // the last one's message
  };
  struct Round {                                 // one chain since the kill
    std::optional<absl::Time> first_commit;      // of a transfer started after the kill
    std::optional<absl::Time> first_on_primary;  // ...touching an account the victim was primary of
    std::optional<absl::Time> recovered;         // ...touching an account the victim held a copy of
    std::map<std::string, Failures>
        failures;  // by "on the victim's accounts: " + Kind(status), or other
    std::optional<absl::Time> in_flight_since;
    std::string in_flight;
    std::string stuck;  // a transfer that never completed
  };

  void Run(size_t c);

  // Records the outcome of chain c's transfer between a and b started at `start`.
  void Note(size_t c, absl::Time start, size_t a, size_t b, const std::optional<absl::Status>& s);

  node::Node& member_;
  const std::vector<FatPtr>& accounts_;
  std::vector<ChainBook>& books_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abandon_{false};
  // farm::Mutex (std::mutex): ThreadSanitizer sees through it (Debian's Abseil is not
  // instrumented, so absl::Mutex would show false races).
  Mutex mu_;
  CondVar cv_;
  std::optional<Kill> kill_ ABSL_GUARDED_BY(mu_);
  std::vector<Round> rounds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace farm::failover_test

#endif  // FARM_TESTS_FAILOVER_BANK_LOAD_H_
