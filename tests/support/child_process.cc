#include "tests/support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace farm::testing {
namespace {

constexpr char kRoleFlag[] = "--farm_child_role=";

std::map<std::string, ChildRole>& Roles() {
  static auto* roles = new std::map<std::string, ChildRole>();
  return *roles;
}

}  // namespace

bool RegisterChildRole(const std::string& name, ChildRole role) {
  Roles()[name] = std::move(role);
  return true;
}

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const std::string& role,
                                                 const std::vector<std::string>& args) {
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  const pid_t parent = ::getpid();
  std::vector<std::string> argv_strings = {"/proc/self/exe", kRoleFlag + role};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  ChildProcess child;
  child.pid_ = pid;
  child.to_child_.reset(to_child[1]);
  child.from_child_.reset(from_child[0]);
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<std::string> ChildProcess::ReadLine(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) return absl::DeadlineExceededError("child printed no line in time");
    pollfd p{from_child_.get(), POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left_ms));
    if (rc < 0 && errno != EINTR) return absl::ErrnoToStatus(errno, "poll");
    if (rc <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(from_child_.get(), chunk, sizeof(chunk));
    if (n == 0) return absl::UnavailableError("child closed its stdout");
    if (n < 0 && errno != EINTR) return absl::ErrnoToStatus(errno, "read");
    if (n > 0) buffer_.append(chunk, static_cast<size_t>(n));
  }
}

absl::StatusOr<std::string> ChildProcess::ReadLineStartingWith(const std::string& prefix,
                                                               absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    absl::StatusOr<std::string> line = ReadLine(deadline - absl::Now());
    if (!line.ok() || absl::StartsWith(*line, prefix)) return line;
  }
}

absl::Status ChildProcess::WriteLine(const std::string& line) {
  const std::string data = line + "\n";
  if (::write(to_child_.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return absl::ErrnoToStatus(errno, "write to child");
  }
  return absl::OkStatus();
}

void ChildProcess::Kill(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

absl::StatusOr<int> ChildProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t rc = ::waitpid(pid_, &status, WNOHANG);
    if (rc == pid_) {
      pid_ = -1;
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return WEXITSTATUS(status);
    }
    if (rc < 0) return absl::ErrnoToStatus(errno, "waitpid");
    if (absl::Now() > deadline) return absl::DeadlineExceededError("child did not exit in time");
    ::usleep(1000);
  }
}

int RunTestMain(int argc, char** argv) {
  if (argc >= 2 && absl::StartsWith(argv[1], kRoleFlag)) {
    const std::string role = argv[1] + std::strlen(kRoleFlag);
    auto it = Roles().find(role);
    if (it == Roles().end()) {
      std::fprintf(stderr, "unknown child role '%s'\n", role.c_str());
      return 2;
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    return it->second(std::vector<std::string>(argv + 2, argv + argc));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace farm::testing
