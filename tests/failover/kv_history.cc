#include "tests/failover/kv_history.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/support/resp_client.h"

namespace farm::testing {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Longer than detection (the tests' 2 s session timeout), the fence and recovery's
// votes, after which calls to the dead node fail at once (Messenger::DropPeer).
constexpr int64_t kPendingBoundNs = 6'000'000'000;
// Between a client's operations: fewer operations overlap a pending one, so the checker's
// search stays small.
constexpr absl::Duration kPause = absl::Milliseconds(2);

// The errors that say the command did not run: refused by a node that does not serve,
// or is not yet the region's primary, or has moved to a newer configuration; every
// attempt aborted; the update could not be sent to its shard's primary; or every backup
// refused the primary's commit record. An "outcome unknown" answer may quote any of
// those as the reason a backup has not answered yet ("... has not reached backup(s) 5
// yet (UNAVAILABLE: backup 5: node 5 is not serving) ..."), yet its commit may stand:
// it is checked first.
bool NotExecuted(const std::string& reply) {
  if (reply.find("outcome unknown") != std::string::npos) return false;
  for (const char* refused :
       {"is not serving", "is becoming the primary", "the configuration changed", "gave up after conflicts",
        "recovers from a failure", "nothing was written", "-ERR no link to node", "-ERR no connection to node",
        "every backup refused the commit"}) {
    if (reply.find(refused) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

KvHistory::KvHistory(std::function<std::vector<uint16_t>()> live_ports, int keys, int clients)
    : live_ports_(std::move(live_ports)), keys_(keys), history_(keys) {
  for (int c = 0; c < clients; ++c) threads_.emplace_back([this, c] { Run(c); });
}

void KvHistory::Stop() {
  stop_.store(true);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void KvHistory::Run(int client) {
  using Kind = kv::testing::RegisterOp::Kind;
  absl::BitGen g;
  std::optional<RespClient> conn;
  for (int i = 0; !stop_.load(); ++i) {
    absl::SleepFor(kPause);
    if (!conn.has_value()) {
      const std::vector<uint16_t> ports = live_ports_();
      if (!ports.empty()) conn = RespClient::Connect(ports[absl::Uniform<size_t>(g, 0, ports.size())]);
      if (!conn.has_value()) {
        absl::SleepFor(absl::Milliseconds(20));
        continue;
      }
    }
    const int key = absl::Uniform(g, 0, keys_);
    const std::string name = absl::StrCat("register-", key);
    kv::testing::RegisterOp op;
    op.start_ns = NowNs();
    std::string reply;
    if (absl::Bernoulli(g, 0.5)) {
      op.kind = Kind::kGet;
      reply = conn->Call({"GET", name});
      op.value = reply == "(nil)" ? std::nullopt : std::optional<std::string>(reply);
    } else {
      op.kind = Kind::kPut;
      op.value = absl::StrCat("c", client, "i", i);
      reply = conn->Call({"SET", name, *op.value, "GET"});  // the old value: did the key exist
      op.existed = reply != "(nil)";
    }
    op.end_ns = NowNs();
    if (reply != "(nil)" && reply.rfind("c", 0) != 0) {  // values are "c..."
      conn.reset();  // the next operation goes through another node (maybe)
      // An error the cluster gives before it runs the command (its node does not serve,
      // or is not yet the primary; the configuration changed; every attempt aborted)
      // says it did not happen: it is left out. Anything else — a closed connection, a
      // timeout, an outcome unknown — may have happened: pending.
      if (NotExecuted(reply) || op.kind == Kind::kGet) continue;
      op.pending = true;
      // Nodes here are SIGKILLed, not cut off: what one had sent is delivered, or lost
      // with it, so a pending update took effect within this bound or never.
      op.end_ns = op.start_ns + kPendingBoundNs;
    }
    MutexLock lock(&mu_);
    history_[key].push_back(std::move(op));
  }
}

absl::Status KvHistory::Check(size_t* operations, size_t* pending) {
  MutexLock lock(&mu_);
  *operations = 0;
  *pending = 0;
  for (int key = 0; key < keys_; ++key) {
    *operations += history_[key].size();
    for (const kv::testing::RegisterOp& op : history_[key]) *pending += op.pending;
    absl::Status s = kv::testing::CheckRegister(history_[key]);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("register-", key, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace farm::testing
