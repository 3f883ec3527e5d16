#include "tests/support/spawn.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"

namespace farm::testing {

absl::StatusOr<pid_t> SpawnWithLog(const std::vector<std::string>& argv, const std::string& log) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

std::string FileTail(const std::string& path, size_t bytes) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

std::string SanitizerReportIn(const std::string& log_path, size_t bytes) {
  std::ifstream in(log_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  size_t at = std::string::npos;
  for (const char* mark : {"WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                           "runtime error: "}) {
    at = std::min(at, all.find(mark));
  }
  return at == std::string::npos ? std::string() : all.substr(at, bytes);
}

std::optional<std::string> LoggedAdminAddress(const std::string& log_path) {
  std::ifstream log(log_path);
  for (std::string line; std::getline(log, line);) {
    const size_t at = line.find("ready; admin port ");
    if (at == std::string::npos) continue;
    std::string rest = line.substr(at + 18);
    return rest.substr(0, rest.find(','));
  }
  return std::nullopt;
}

std::optional<uint16_t> LoggedRespPort(const std::string& log_path) {
  std::ifstream log(log_path);
  for (std::string line; std::getline(log, line);) {
    if (line.find("kv: RESP on ") == std::string::npos) continue;
    uint32_t port = 0;
    if (absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &port) && port != 0 && port <= 65535) {
      return static_cast<uint16_t>(port);
    }
  }
  return std::nullopt;
}

int ExitCode(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -2;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace farm::testing
