// Context: a worker thread as an application sees it — the public API's handle for "the
// thread I run on" (farm/api/farm.h). Every API call takes the calling thread's Context;
// handlers are given theirs.
//
// Implementations: tx::ThreadContext (a node's worker thread: transactions, lock-free
// reads, messages) and LoopContext (a bare event loop, for services' tests and tools
// that run a protocol server without a node). Applications never name either.
//
// Threads: everything on the context's own thread, except Post and the accessors marked
// "any thread". Continuations of API calls run on the thread that started them.
#ifndef FARM_EVENT_CONTEXT_H_
#define FARM_EVENT_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/base/address.h"

namespace farm {

class Context {
 public:
  using Work = absl::AnyInvocable<void()>;
  using TimerId = uint64_t;

  // This machine (0 for a context without a node). Any thread.
  virtual NodeId self() const = 0;
  // The thread's index among its process's worker threads: 0 .. threads−1. Any thread.
  virtual size_t thread_index() const = 0;
  // True for a node's worker thread: transactions, lock-free reads and messages work.
  virtual bool transactional() const = 0;
  // The machines of the current configuration that hold data (compute-only members,
  // which only run applications, are left out), ascending; empty before the first
  // configuration and without a node.
  virtual std::vector<NodeId> members() const = 0;

  // Any thread: runs `work` on this thread, after work posted earlier from the caller.
  virtual void Post(Work work) = 0;
  // Runs `work` on this thread after the current callback returns (a continuation that
  // must not run inside the call that produced it).
  virtual void Defer(Work work) = 0;
  virtual TimerId RunAfter(absl::Duration delay, Work work) = 0;
  // True when the timer had not fired yet.
  virtual bool CancelTimer(TimerId id) = 0;
  // Runs `on_ready` on this thread whenever `fd` is readable or hung up (level-
  // triggered) until UnwatchFd. The descriptor stays the caller's.
  virtual absl::Status WatchFd(int fd, Work on_ready) = 0;
  virtual void UnwatchFd(int fd) = 0;

 protected:
  Context() = default;
  ~Context() = default;  // not owned through this interface
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

// Runs `fn` on ctx's thread and waits until it has returned. From any other thread
// (start-up and shut-down code); never from a worker thread, which would wait for itself
// or for a thread that may be waiting for it.
void RunOnContext(Context& ctx, absl::AnyInvocable<void()> fn);

}  // namespace farm

#endif  // FARM_EVENT_CONTEXT_H_
