// The benchmark's server process: a FaRM node (one backend, one worker thread) that
// owns a region of memory and answers block reads three ways: one-sided READs of the
// region, an RPC handler, and the plain TCP baseline server.
#ifndef FARM_TOOLS_FABRIC_BENCH_BENCH_SERVER_H_
#define FARM_TOOLS_FABRIC_BENCH_BENCH_SERVER_H_

#include <cstdint>
#include <string>

#include "farm/event/event_loop.h"

namespace farm::bench {

struct ServerOptions {
  std::string backend;
  std::string device;  // verbs: the RDMA device (empty: the first active one)
  uint64_t region_bytes = 64u << 20;
  EventLoopOptions loop;
  bool tcp_baseline = false;
};

// Runs until stdin closes. Prints "READY <locator> <capability> <baseline port or 0>".
int RunServer(const ServerOptions& options);

}  // namespace farm::bench

#endif  // FARM_TOOLS_FABRIC_BENCH_BENCH_SERVER_H_
