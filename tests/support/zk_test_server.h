// ZkTestServer: a real ZooKeeper server (Debian's `zookeeper` package) started by hand
// for one test binary: its own config, data directory, log file and free loopback
// port; killed with the test process. Pause/Resume (SIGSTOP/SIGCONT) cut every
// client off without closing sockets, as a partition does.
#ifndef FARM_TESTS_SUPPORT_ZK_TEST_SERVER_H_
#define FARM_TESTS_SUPPORT_ZK_TEST_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace farm::testing {

class ZkTestServer {
 public:
  // tickTime 100 ms, sessions from 0.5 s: a killed member is gone within about a second.
  // FailedPrecondition when java or the ZooKeeper jar is missing.
  static absl::StatusOr<std::unique_ptr<ZkTestServer>> Start();
  ~ZkTestServer();

  std::string address() const;  // "127.0.0.1:<port>"
  void Pause();
  void Resume();
  // The tail of the server's log, for failure messages.
  std::string LogTail() const;

 private:
  ZkTestServer() = default;
  absl::Status WaitReady(absl::Duration timeout) const;

  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_ZK_TEST_SERVER_H_
