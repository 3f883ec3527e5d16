#include "tests/kv/resp/run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "farm/base/unique_fd.h"

namespace farm::kv::testing {

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const std::string& input, absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("no program");
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  UniqueFd to_child(in[1]), from_out(out[0]), from_err(err[0]);
  ::fcntl(to_child.get(), F_SETFL, O_NONBLOCK);
  if (input.empty()) to_child.reset();

  ProcessResult result;
  size_t written = 0;
  const absl::Time deadline = absl::Now() + timeout;
  bool timed_out = false;
  while (from_out.valid() || from_err.valid()) {
    pollfd fds[3];
    int n = 0;
    if (from_out.valid()) fds[n++] = {from_out.get(), POLLIN, 0};
    if (from_err.valid()) fds[n++] = {from_err.get(), POLLIN, 0};
    if (to_child.valid()) fds[n++] = {to_child.get(), POLLOUT, 0};
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      timed_out = true;
      break;
    }
    if (::poll(fds, n, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) < 0 &&
        errno != EINTR) {
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == to_child.get()) {
        const ssize_t w = ::write(to_child.get(), input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) to_child.reset();
        if (written == input.size()) to_child.reset();  // EOF for the child
        continue;
      }
      UniqueFd& from = fds[i].fd == from_out.get() ? from_out : from_err;
      std::string& sink = &from == &from_out ? result.out : result.err;
      char buffer[4096];
      const ssize_t r = ::read(from.get(), buffer, sizeof(buffer));
      if (r > 0) {
        sink.append(buffer, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        from.reset();
      }
    }
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(
        argv[0], " ran past its deadline; stdout: ", result.out, " stderr: ", result.err));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace farm::kv::testing
