#include "tests/support/zk_test_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "farm/fabric/socket_util.h"
#include "tests/support/spawn.h"

namespace farm::testing {
namespace {

constexpr char kZkJar[] = "/usr/share/java/zookeeper.jar";
constexpr char kSlf4jJar[] = "/usr/share/java/slf4j-simple.jar";

absl::StatusOr<int> FreePort() {
  absl::StatusOr<UniqueFd> fd = ListenTcp("127.0.0.1:0");
  if (!fd.ok()) return fd.status();
  absl::StatusOr<std::string> addr = LocalTcpAddress(fd->get());
  if (!addr.ok()) return addr.status();
  return std::atoi(addr->substr(addr->rfind(':') + 1).c_str());
}

// Sends a four-letter word and returns the answer ("" when nobody answers).
std::string FourLetterWord(int port, const char* word) {
  absl::StatusOr<UniqueFd> fd =
      ConnectTcp(absl::StrCat("127.0.0.1:", port), absl::Now() + absl::Milliseconds(300));
  if (!fd.ok()) return "";
  const absl::Time deadline = absl::Now() + absl::Milliseconds(500);
  if (!SendAll(fd->get(), word, 4, deadline).ok()) return "";
  std::string out;
  char buf[512];
  while (absl::Now() < deadline) {
    const ssize_t n = ::recv(fd->get(), buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n > 0) out.append(buf, n);
    else ::usleep(1000);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ZkTestServer>> ZkTestServer::Start() {
  if (::access(kZkJar, R_OK) != 0 || ::access("/usr/bin/java", X_OK) != 0) {
    return absl::FailedPreconditionError(
        "ZooKeeper server not installed (Debian packages zookeeper and a JRE; "
        "deploy/install-deps.sh installs them)");
  }
  std::unique_ptr<ZkTestServer> zk(new ZkTestServer());
  char tmpl[] = "/tmp/farm-zk-test-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return absl::ErrnoToStatus(errno, "mkdtemp");
  zk->dir_ = tmpl;
  absl::StatusOr<int> port = FreePort();
  if (!port.ok()) return port.status();
  zk->port_ = *port;
  {
    std::ofstream cfg(zk->dir_ + "/zoo.cfg");
    cfg << "tickTime=100\ninitLimit=10\nsyncLimit=5\nminSessionTimeout=500\n"
        << "maxSessionTimeout=10000\ndataDir=" << zk->dir_ << "/data\n"
        << "clientPort=" << zk->port_ << "\nclientPortAddress=127.0.0.1\n"
        << "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,stat\n";
  }
  std::filesystem::create_directories(zk->dir_ + "/data");
  absl::StatusOr<pid_t> pid = SpawnWithLog(
      {"/usr/bin/java", "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
       "-cp", absl::StrCat(kZkJar, ":", kSlf4jJar),
       "org.apache.zookeeper.server.quorum.QuorumPeerMain", zk->dir_ + "/zoo.cfg"},
      zk->dir_ + "/zookeeper.log");
  if (!pid.ok()) return pid.status();
  zk->pid_ = *pid;
  if (absl::Status s = zk->WaitReady(absl::Seconds(30)); !s.ok()) return s;
  return zk;
}

absl::Status ZkTestServer::WaitReady(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (absl::StrContains(FourLetterWord(port_, "srvr"), "Mode:")) return absl::OkStatus();
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      return absl::InternalError(absl::StrCat("ZooKeeper exited: ", LogTail()));
    }
    ::usleep(50 * 1000);
  }
  return absl::DeadlineExceededError(absl::StrCat("ZooKeeper not ready: ", LogTail()));
}

ZkTestServer::~ZkTestServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string ZkTestServer::address() const { return absl::StrCat("127.0.0.1:", port_); }
void ZkTestServer::Pause() { ::kill(pid_, SIGSTOP); }
void ZkTestServer::Resume() { ::kill(pid_, SIGCONT); }

std::string ZkTestServer::LogTail() const { return FileTail(dir_ + "/zookeeper.log"); }

}  // namespace farm::testing
