// The kv store's RESP service: the generic RESP server (resp/resp_server.h) with a kv
// RespSession (resp_session.h) per connection over the Store of its worker thread.
#ifndef FARM_KV_RESP_KV_RESP_SERVER_H_
#define FARM_KV_RESP_KV_RESP_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "kv/store.h"
#include "resp/command_extension.h"
#include "resp/resp_server.h"

namespace farm::kv::resp {

struct KvRespOptions {
  // "host:port" (numeric host; "[::1]:port" for IPv6); port 0 picks a free one.
  std::string listen = "127.0.0.1:0";
  std::string password;                  // empty: no AUTH
  int64_t max_bulk_bytes = 512ll << 20;  // longest argument a request may carry
  size_t max_clients = 10000;
  size_t max_output_bytes = 64 << 20;  // per client: replies waiting to be read
  size_t max_in_flight = 128;          // per client: commands started, not replied
  int max_txn_attempts = 100;
  // Another service's commands answered on this port too (resp/command_extension.h;
  // farm_node --services=kv,graph); null: the store's commands only.
  std::shared_ptr<::farm::resp::CommandExtension> extension;
};

// Serves the store on `threads` (thread i's connections use store_of(i), which must
// outlive the server and the operations started on it; their writes of a key are
// combined by one WriteCombiner per thread, write_combiner.h). InvalidArgument for no threads
// or a thread without a store; the listener's error.
absl::StatusOr<std::unique_ptr<::farm::resp::RespServer>> StartKvRespServer(
    std::vector<Context*> threads, std::function<Store*(size_t thread)> store_of, KvRespOptions options);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_KV_RESP_SERVER_H_
