// RedisServer: a private redis-server child process for benchmark baselines (tx_bench's
// bank transfers, the YCSB driver), listening on 127.0.0.1 on a free TCP port.
//
// The server runs with RDB snapshots off and, unless an appendfsync policy is given, no
// AOF either (with one: appendonly yes and that policy), protected mode off,
// in a fresh temporary directory that also holds its log (redis.log); the directory is
// removed when the RedisServer is destroyed. Start() returns once the server answers
// PING.
//
// Lifetime: the destructor sends SIGTERM, waits up to 5 s for the exit, then SIGKILLs.
// The child also dies with its parent (PR_SET_PDEATHSIG, SIGKILL), so a crashed run
// leaves nothing behind. Linux delivers that signal when the *thread* that forked exits,
// so call Start() from a thread that outlives the server (e.g. main's).
//
// Not thread-safe; port() may be read from any thread.
#ifndef FARM_TOOLS_COMMON_REDIS_SERVER_H_
#define FARM_TOOLS_COMMON_REDIS_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "tools/common/server_process.h"

namespace farm::bench {

class RedisServer {
 public:
  // Starts `binary` (a path). NotFound when it does not exist or is not executable;
  // Unavailable, with the tail of the server's log, when it exits or does not answer
  // PING within 5 s (after a few retries on other ports if its port was taken meanwhile).
  // `appendfsync`: empty (no AOF), or always, everysec, no.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      const std::string& binary = "/usr/bin/redis-server", const std::string& appendfsync = "");

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  uint16_t port() const { return process_->port(); }
  // The server's log; valid until destruction.
  const std::string& log_path() const { return process_->log_path(); }

 private:
  explicit RedisServer(std::unique_ptr<ServerProcess> process) : process_(std::move(process)) {}

  std::unique_ptr<ServerProcess> process_;
};

}  // namespace farm::bench

#endif  // FARM_TOOLS_COMMON_REDIS_SERVER_H_
