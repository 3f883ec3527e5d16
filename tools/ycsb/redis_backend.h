// The Redis baseline: SyncKvClient over hiredis, one connection per client, one
// command per operation (no pipelining):
//   Get -> GET k     Insert -> SET k v NX     Update -> SET k v     MultiGet -> MGET k1 k2 ...
//   Stats -> DBSIZE and INFO memory's used_memory (everything the server allocated,
//            including its own ~1 MB at start)
// Commands go through redisCommandArgv with argument arrays the client keeps, so keys
// and values are sent as binary-safe bulk strings and nothing is formatted per call.
#ifndef FARM_TOOLS_YCSB_REDIS_BACKEND_H_
#define FARM_TOOLS_YCSB_REDIS_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/ycsb/sync_kv_client.h"

namespace farm::ycsb {

struct RedisClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  absl::Duration timeout = absl::Seconds(5);  // connect, and each request
};

// Connects with TCP_NODELAY and checks that the server answers (DBSIZE, INFO).
// Unavailable otherwise.
absl::StatusOr<std::unique_ptr<SyncKvClient>> ConnectRedis(const RedisClientOptions& options);

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_REDIS_BACKEND_H_
