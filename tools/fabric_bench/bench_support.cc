#include "tools/fabric_bench/bench_support.h"

#include <unistd.h>

#include <atomic>

#include "absl/strings/str_format.h"

namespace farm::bench {

FabricOptions BenchFabricOptions(const std::string& backend, const std::string& device) {
  static std::atomic<int> counter{0};
  FabricOptions o;
  o.backend = backend;
  o.device = device;
  o.cluster_secret = "farm-fabric-benchmark-secret";
  o.listen_address = backend == "shm" ? absl::StrFormat("/tmp/farm-bench-%d-%d.sock", ::getpid(),
                                                        counter.fetch_add(1))
                                      : "127.0.0.1:0";
  return o;
}

absl::StatusOr<std::unique_ptr<LoopThread>> StartLoop(Fabric& fabric,
                                                      const EventLoopOptions& options) {
  absl::StatusOr<std::unique_ptr<Doorbell>> bell = fabric.CreateDoorbell();
  if (!bell.ok()) return bell.status();
  absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(std::move(*bell), options);
  if (!loop.ok()) return loop.status();
  return std::make_unique<LoopThread>(std::move(*loop));
}

}  // namespace farm::bench
