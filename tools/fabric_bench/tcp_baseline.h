// The baseline: a plain TCP request/response server and its client, written as a
// competent production server would be (epoll, non-blocking, TCP_NODELAY, every
// available request handled per wake-up and its responses sent in one write), so the
// comparison is with TCP, not with a strawman.
#ifndef FARM_TOOLS_FABRIC_BENCH_TCP_BASELINE_H_
#define FARM_TOOLS_FABRIC_BENCH_TCP_BASELINE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"
#include "tools/common/latency.h"

namespace farm::bench {

class TcpBaselineServer {
 public:
  // Serves reads of [memory, memory + bytes) on 127.0.0.1 on a free port.
  static absl::StatusOr<std::unique_ptr<TcpBaselineServer>> Start(const char* memory,
                                                                  uint64_t bytes);
  ~TcpBaselineServer();
  uint16_t port() const { return port_; }

 private:
  TcpBaselineServer(const char* memory, uint64_t bytes) : memory_(memory), bytes_(bytes) {}
  void Run();

  const char* memory_;
  const uint64_t bytes_;
  UniqueFd listen_fd_;
  UniqueFd stop_fd_;
  uint16_t port_ = 0;
  std::thread thread_;
};

struct Measurement {
  double ops_per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Reads blocks of `size` at random offsets below `bytes` from the server at `port`:
// first one at a time for `duration` (latency), then with `window` requests in flight
// (rate).
absl::StatusOr<Measurement> MeasureTcpBaseline(uint16_t port, uint32_t size, uint64_t bytes,
                                               int window, absl::Duration duration);

}  // namespace farm::bench

#endif  // FARM_TOOLS_FABRIC_BENCH_TCP_BASELINE_H_
