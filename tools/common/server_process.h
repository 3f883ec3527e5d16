// ServerProcess: a private server child process (redis-server, memcached, ...) for a
// benchmark baseline, listening on 127.0.0.1 on a free TCP port picked at start.
//
// The child runs in a fresh temporary directory that also holds its log (its stdout
// and stderr, and whatever the server logs to the path it is given); the directory is
// removed when the ServerProcess is destroyed. Start() returns once the readiness probe
// answers true.
//
// Lifetime: the destructor sends SIGTERM, waits up to 5 s for the exit, then SIGKILLs.
// The child also dies with its parent (PR_SET_PDEATHSIG, SIGKILL), so a crashed run
// leaves nothing behind. Linux delivers that signal when the *thread* that forked exits,
// so call Start() from a thread that outlives the server (e.g. main's).
//
// Not thread-safe; the accessors may be read from any thread.
#ifndef FARM_TOOLS_COMMON_SERVER_PROCESS_H_
#define FARM_TOOLS_COMMON_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace farm::bench {

// How to run one kind of server.
struct ServerLaunchSpec {
  std::string name;                        // for messages, e.g. "redis-server"
  std::string binary;                      // a path
  std::string dir_prefix = "farm-server";  // temporary directory name: /tmp/<prefix>-XXXXXX
  std::string log_name = "server.log";     // file name of the log inside the directory
  // The command line for one attempt: argv[0] is `binary`. Called with the port, the
  // temporary directory and the log's path.
  std::function<std::vector<std::string>(uint16_t port, const std::string& dir,
                                         const std::string& log_path)>
      argv;
  // True once the server on 127.0.0.1:port serves requests; must return within about
  // `timeout`.
  std::function<bool(uint16_t port, absl::Duration timeout)> ready;
  std::string ready_what;  // what `ready` checks, for messages: "PONG to PING"
};

class ServerProcess {
 public:
  // NotFound when the binary does not exist or is not executable (naming the Debian
  // package `package`); Unavailable, with the tail of the server's log, when it exits or
  // is not ready within 5 s (after a few retries on other ports if its port was taken
  // meanwhile).
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(ServerLaunchSpec spec,
                                                              const std::string& package);

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess();

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // The temporary directory and the log; valid until destruction.
  const std::string& dir() const { return dir_; }
  const std::string& log_path() const { return log_path_; }

 private:
  ServerProcess(ServerLaunchSpec spec, std::string dir);

  // One attempt to run the server on `port`; on failure the child is gone again.
  absl::Status Launch(uint16_t port);
  absl::Status WaitUntilReady(absl::Duration timeout);
  // SIGTERM, wait up to `grace`, then SIGKILL; reaps the child. No-op without one.
  void Stop(absl::Duration grace);
  // The last bytes of the log, for error messages.
  std::string LogTail() const;

  const ServerLaunchSpec spec_;
  const std::string dir_;
  const std::string log_path_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace farm::bench

#endif  // FARM_TOOLS_COMMON_SERVER_PROCESS_H_
