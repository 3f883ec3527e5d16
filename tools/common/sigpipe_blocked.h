// SigpipeBlocked: while alive, a write on this thread into a pipe whose reader is gone
// fails with EPIPE instead of killing the process with SIGPIPE (a child that exited: a
// missing or failing gnuplot, a crashed node process of a test); the SIGPIPE such a
// write raised is consumed before the thread's signal mask is restored. SIGPIPE goes to
// the writing thread, so blocking it there suffices. Fork children after, not inside,
// its scope: they would inherit the blocked signal.
#ifndef FARM_TOOLS_COMMON_SIGPIPE_BLOCKED_H_
#define FARM_TOOLS_COMMON_SIGPIPE_BLOCKED_H_

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace farm::tools {

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

}  // namespace farm::tools

#endif  // FARM_TOOLS_COMMON_SIGPIPE_BLOCKED_H_
