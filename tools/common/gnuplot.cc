#include "tools/common/gnuplot.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <ctime>

#include "absl/strings/str_cat.h"

namespace farm::tools {
namespace {

// While alive, a write to a pipe whose reader is gone fails with EPIPE on this thread
// instead of killing the process with SIGPIPE (a gnuplot that is missing, or that
// exits before it read the whole script); the SIGPIPE that write raised, if any, is
// consumed before the thread's mask is restored. (SIGPIPE goes to the writing thread.)
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    if (!was_pending_) {
      const timespec now{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace

absl::Status RunGnuplot(const std::string& script, const std::string& output, const std::string& gnuplot) {
  FILE* pipe = popen(absl::StrCat(gnuplot, " 2>&1").c_str(), "w");
  if (pipe == nullptr) return absl::NotFoundError("cannot run gnuplot (Debian package gnuplot-nox)");
  int status = -1;
  bool written = false;
  {
    // After popen: the child must not inherit the blocked signal. pclose inside: it
    // flushes whatever a failed fflush left.
    SigpipeBlocked blocked;
    written = std::fwrite(script.data(), 1, script.size(), pipe) == script.size() && std::fflush(pipe) == 0;
    status = pclose(pipe);
  }
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 127) return absl::NotFoundError("gnuplot is not installed (Debian package gnuplot-nox)");
    return absl::InternalError(absl::StrCat("gnuplot failed (exit status ", code, ") writing ", output));
  }
  if (!written) return absl::InternalError(absl::StrCat("gnuplot exited before it read its script for ", output));
  return absl::OkStatus();
}

}  // namespace farm::tools
