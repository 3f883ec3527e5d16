// The graph service over RESP: the generic RESP server (resp/resp_server.h) with a
// GraphSession (graph_session.h) per connection over the GraphStore of its worker
// thread.
//
//   auto server = StartGraphRespServer(threads, [&](size_t i) { return stores[i].get(); },
//                                      {.listen = "127.0.0.1:6380"});
//   ... redis-cli -p (*server)->port() NODE.ADD 2048 1 1700000000 hello ...
//
// Threads and lifetime: as RespServer's (Start, Stop and the destructor from a thread
// that is not one of `threads`, while they run). store_of(i) is called once per thread,
// in Start; each store is used only on its thread and must outlive the server and the
// operations its sessions started.
#ifndef FARM_GRAPH_RESP_GRAPH_RESP_SERVER_H_
#define FARM_GRAPH_RESP_GRAPH_RESP_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "graph/resp/graph_session.h"
#include "graph/store.h"
#include "resp/resp_server.h"

namespace farm::graph {

struct GraphRespOptions {
  // "host:port" (numeric host; "[::1]:port" for IPv6); port 0 picks a free one.
  std::string listen = "127.0.0.1:0";
  size_t max_clients = 10000;
  int64_t max_bulk_bytes = kDefaultGraphMaxBulkBytes;  // longest argument a request may carry
  size_t max_output_bytes = 64 << 20;                  // per client: replies waiting to be read
};

// Serves the graph on `threads` (thread i's connections use store_of(i)). InvalidArgument
// for no threads, no store_of or a thread without a store; the listener's error.
absl::StatusOr<std::unique_ptr<::farm::resp::RespServer>> StartGraphRespServer(
    std::vector<Context*> threads, std::function<GraphStore*(size_t thread)> store_of,
    GraphRespOptions options);

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_RESP_SERVER_H_
