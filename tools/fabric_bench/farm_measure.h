// The FaRM side of the benchmark: one-sided ops on the server's region (READ, WRITE, CAS,
// FETCH_ADD) and block reads with RPCs over the ring buffers, each measured one at a
// time (latency) and with a window of requests in flight (rate).
#ifndef FARM_TOOLS_FABRIC_BENCH_FARM_MEASURE_H_
#define FARM_TOOLS_FABRIC_BENCH_FARM_MEASURE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "tools/fabric_bench/tcp_baseline.h"

namespace farm::bench {

class OneSidedClient {
 public:
  // `device`: the RDMA device for verbs (empty: the first active one).
  static absl::StatusOr<std::unique_ptr<OneSidedClient>> Connect(const std::string& backend,
                                                                 const std::string& device,
                                                                 const std::string& locator,
                                                                 const RegionCapability& target);
  // `op` at random 64-byte-aligned offsets; atomics use size 8 (CAS 0 -> 0, FETCH_ADD 1).
  absl::StatusOr<Measurement> Measure(Opcode op, uint32_t size, int window,
                                      absl::Duration duration);

 private:
  OneSidedClient() = default;
  absl::StatusOr<Completion> Wait();

  RegionCapability target_;
  std::unique_ptr<Fabric> fabric_;
  std::unique_ptr<Region> buffer_;
  LocalRegion local_;
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<Endpoint> endpoint_;
};

class RpcReader {
 public:
  static absl::StatusOr<std::unique_ptr<RpcReader>> Connect(const std::string& backend,
                                                            const std::string& device,
                                                            const std::string& locator,
                                                            uint64_t region_bytes,
                                                            const EventLoopOptions& loop);
  ~RpcReader();
  absl::StatusOr<Measurement> Measure(uint32_t size, int window, absl::Duration duration);

 private:
  RpcReader() = default;

  uint64_t region_bytes_ = 0;
  std::unique_ptr<Fabric> fabric_;
  std::unique_ptr<LoopThread> loop_;
  std::unique_ptr<Messenger> messenger_;
};

// Copies blocks of `size` from random offsets of a local region of `bytes` with memcpy:
// the floor a one-sided READ on shared memory is compared with.
Measurement MeasureRawCopy(uint32_t size, uint64_t bytes, absl::Duration duration);

}  // namespace farm::bench

#endif  // FARM_TOOLS_FABRIC_BENCH_FARM_MEASURE_H_
