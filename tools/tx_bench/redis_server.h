// RedisServer: a private redis-server child process for the transaction benchmark's
// Redis baseline, listening on 127.0.0.1 on a free TCP port.
//
// The server runs with persistence off (no RDB snapshots, no AOF), protected mode off,
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
#ifndef FARM_TOOLS_TX_BENCH_REDIS_SERVER_H_
#define FARM_TOOLS_TX_BENCH_REDIS_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace farm::bench {

class RedisServer {
 public:
  // Starts `binary` (a path). NotFound when it does not exist or is not executable;
  // Unavailable, with the tail of the server's log, when it exits or does not answer
  // PING within 5 s (after a few retries on other ports if its port was taken meanwhile).
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      const std::string& binary = "/usr/bin/redis-server");

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer();

  uint16_t port() const { return port_; }
  // The server's log; valid until destruction.
  const std::string& log_path() const { return log_path_; }

 private:
  RedisServer(std::string binary, std::string dir);

  // One attempt to run the server on `port`; on failure the child is gone again.
  absl::Status Launch(uint16_t port);
  absl::Status WaitUntilReady(absl::Duration timeout);
  // SIGTERM, wait up to `grace`, then SIGKILL; reaps the child. No-op without one.
  void Stop(absl::Duration grace);
  // The last bytes of the log, for error messages.
  std::string LogTail() const;

  const std::string binary_;
  const std::string dir_;
  const std::string log_path_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace farm::bench

#endif  // FARM_TOOLS_TX_BENCH_REDIS_SERVER_H_
