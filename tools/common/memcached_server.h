// MemcachedServer: a private memcached child process for benchmark baselines (the YCSB
// driver), listening on TCP 127.0.0.1 on a free port, UDP off:
//   memcached -l 127.0.0.1 -p PORT -U 0 -t THREADS -m MB -M [-c CONNS] [-u root]
// -M makes a full cache answer stores with an error instead of evicting, so a benchmark
// that sized the memory too small fails loudly rather than losing records. Its
// stdout/stderr go to memcached.log in a fresh temporary directory, removed on
// destruction. Start() returns once the server answers "version".
//
// Lifetime: as RedisServer (tools/common/server_process.h): SIGTERM then SIGKILL on
// destruction, and the child dies with the thread that started it.
//
// Not thread-safe; port() may be read from any thread.
#ifndef FARM_TOOLS_COMMON_MEMCACHED_SERVER_H_
#define FARM_TOOLS_COMMON_MEMCACHED_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "tools/common/server_process.h"

namespace farm::bench {

struct MemcachedServerOptions {
  std::string binary = "/usr/bin/memcached";
  int threads = 4;             // -t: worker threads; at least 1
  int memory_mb = 64;          // -m: item memory in MiB; at least 1
  int max_connections = 1024;  // -c
};

class MemcachedServer {
 public:
  // NotFound when the binary does not exist or is not executable; InvalidArgument for
  // bad options; Unavailable, with the tail of the server's log, when it exits or does
  // not answer "version" within 5 s.
  static absl::StatusOr<std::unique_ptr<MemcachedServer>> Start(
      const MemcachedServerOptions& options = {});

  MemcachedServer(const MemcachedServer&) = delete;
  MemcachedServer& operator=(const MemcachedServer&) = delete;

  uint16_t port() const { return process_->port(); }
  // The server's log; valid until destruction.
  const std::string& log_path() const { return process_->log_path(); }

 private:
  explicit MemcachedServer(std::unique_ptr<ServerProcess> process) : process_(std::move(process)) {}

  std::unique_ptr<ServerProcess> process_;
};

}  // namespace farm::bench

#endif  // FARM_TOOLS_COMMON_MEMCACHED_SERVER_H_
