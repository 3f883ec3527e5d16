#include "tools/common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "tools/common/sigpipe_blocked.h"

namespace farm {

absl::StatusOr<Subprocess> Subprocess::Spawn(const std::vector<std::string>& argv_in) {
  if (argv_in.empty()) return absl::InvalidArgumentError("no program to run");
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe2");
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  // Everything the child needs is prepared before fork: after it, only exec-safe calls.
  std::vector<std::string> argv_strings = argv_in;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  Subprocess child;
  child.pid_ = pid;
  child.to_child_.reset(to_child[1]);
  child.from_child_.reset(from_child[0]);
  return child;
}

Subprocess::~Subprocess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<std::string> Subprocess::ReadLine(absl::Duration timeout) {
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

absl::StatusOr<std::string> Subprocess::ReadLineStartingWith(const std::string& prefix,
                                                             absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    absl::StatusOr<std::string> line = ReadLine(deadline - absl::Now());
    if (!line.ok() || absl::StartsWith(*line, prefix)) return line;
  }
}

absl::Status Subprocess::WriteLine(const std::string& line) {
  const std::string data = line + "\n";
  const tools::SigpipeBlocked blocked;  // a child that exited: EPIPE, not this process's death
  if (::write(to_child_.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return absl::ErrnoToStatus(errno, "write to child");
  }
  return absl::OkStatus();
}

void Subprocess::Kill(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
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

}  // namespace farm
