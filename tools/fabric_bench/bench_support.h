// Set-up shared by the benchmark's client and server.
#ifndef FARM_TOOLS_FABRIC_BENCH_BENCH_SUPPORT_H_
#define FARM_TOOLS_FABRIC_BENCH_BENCH_SUPPORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"

namespace farm::bench {

// Fabric options for a benchmark process: a fresh address and the benchmark's secret;
// `device` is the RDMA device for verbs (empty: the first active one).
FabricOptions BenchFabricOptions(const std::string& backend, const std::string& device = "");

// A worker thread running an event loop with `options`.
absl::StatusOr<std::unique_ptr<LoopThread>> StartLoop(Fabric& fabric,
                                                      const EventLoopOptions& options);

}  // namespace farm::bench

#endif  // FARM_TOOLS_FABRIC_BENCH_BENCH_SUPPORT_H_
