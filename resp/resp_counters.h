// RespCounters: statistics of a RESP service, updated by every connection's loop thread
// (relaxed atomics: each figure is exact, figures are not a consistent snapshot).
#ifndef FARM_RESP_RESP_COUNTERS_H_
#define FARM_RESP_RESP_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace farm::resp {

// A copy of the counters, for callers.
struct RespStats {
  uint64_t connections_accepted = 0;  // since start
  uint64_t connections_open = 0;      // now
  uint64_t connections_rejected = 0;  // over max_clients
  uint64_t commands = 0;              // requests handled (each queued command counts once)
  uint64_t error_replies = 0;         // replies that were errors
  uint64_t protocol_errors = 0;       // connections closed for a malformed request
};

struct RespCounters {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connections_rejected{0};
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> error_replies{0};
  std::atomic<uint64_t> protocol_errors{0};

  static void Add(std::atomic<uint64_t>& counter, uint64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  static void Sub(std::atomic<uint64_t>& counter, uint64_t n = 1) {
    counter.fetch_sub(n, std::memory_order_relaxed);
  }
  RespStats Snapshot() const {
    RespStats s;
    s.connections_accepted = connections_accepted.load(std::memory_order_relaxed);
    s.connections_open = connections_open.load(std::memory_order_relaxed);
    s.connections_rejected = connections_rejected.load(std::memory_order_relaxed);
    s.commands = commands.load(std::memory_order_relaxed);
    s.error_replies = error_replies.load(std::memory_order_relaxed);
    s.protocol_errors = protocol_errors.load(std::memory_order_relaxed);
    return s;
  }
};

}  // namespace farm::resp

#endif  // FARM_RESP_RESP_COUNTERS_H_
