// EventLoop: the engine of one worker thread (paper section 3.1, "event-based
// programming model").
//
// Each iteration runs posted and deferred work items, polls every registered Poller
// (ring receivers, completion queues), and fires due timers. When nothing has happened
// for `spin`, the loop parks in epoll_wait on its doorbell and its watched descriptors
// (completion queues' wait_fds, sockets), so that several node processes share a small
// machine without burning its cores. Work posted from other threads and WRITEs with
// notify from peers ring the doorbell.
//
// Invariants:
//   1. No lost wake-up: before parking, the loop arms its doorbell and lets each poller
//      arm its descriptors (Poller::PrepareToPark), then polls every source once more;
//      a producer publishes its work before ringing (doorbell.h).
//   2. Work items posted from one thread run in the order posted.
//   3. Everything except Post, Stop and the accessors marked "any thread" runs on the
//      loop's thread: the thread that calls Run. Callbacks run there too, so state
//      touched only by callbacks needs no locks.
#ifndef FARM_EVENT_EVENT_LOOP_H_
#define FARM_EVENT_EVENT_LOOP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/doorbell.h"

namespace farm {

// Something the loop polls on every iteration.
class Poller {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Poller() = default;
  // Makes progress without blocking; returns how many events it handled (0 when idle).
  virtual int Poll() = 0;
  // The latest time by which the poller must be polled again even if nothing wakes the
  // loop (e.g. an RPC deadline). Consulted before parking. Earlier is harmless.
  virtual TimePoint NextDeadline() const { return TimePoint::max(); }
  // The loop is about to park: arm whatever must be armed for its descriptors to wake
  // it (a verbs completion queue's event). The loop polls every poller after this and
  // parks only if none has work.
  virtual void PrepareToPark() {}
};

struct EventLoopOptions {
  // How long the loop keeps polling after its last event before it parks.
  absl::Duration spin = absl::Microseconds(50);
  // While busy, how often the loop checks its watched descriptors.
  absl::Duration fd_check_interval = absl::Milliseconds(1);
  // While spinning without events, give the core to any other runnable thread every
  // few empty polls (sched_yield). On a small machine this keeps spinning loops from
  // starving the threads they wait for (a tcp responder, a peer node's loop); on an
  // idle core it costs a system call every eighth empty poll.
  bool yield_while_spinning = true;
};

struct EventLoopStats {
  uint64_t iterations = 0;
  uint64_t events = 0;  // work items, poller events, timers, descriptor callbacks
  uint64_t parks = 0;
};

class EventLoop {
 public:
  using Work = absl::AnyInvocable<void()>;
  using Clock = std::chrono::steady_clock;
  using TimerId = uint64_t;

  // `doorbell` becomes the loop's wake-up; its id is what peers notify.
  static absl::StatusOr<std::unique_ptr<EventLoop>> Create(std::unique_ptr<Doorbell> doorbell,
                                                           const EventLoopOptions& options = {});
  ~EventLoop();

  // --- Any thread ---
  // Runs `work` on the loop thread, after work posted earlier from the same thread.
  void Post(Work work);
  // Makes Run return after the current iteration.
  void Stop();
  uint32_t doorbell_id() const { return doorbell_->id(); }
  // True while some thread is inside Run.
  bool running() const { return running_.load(std::memory_order_acquire); }
  bool InLoopThread() const { return std::this_thread::get_id() == thread_.load(); }

  // --- Loop thread ---
  // Runs iterations until Stop. The calling thread becomes the loop thread.
  void Run();
  // One iteration without parking; returns whether anything happened. For tests and
  // for threads that drive a loop by hand. Never from inside one of this loop's own
  // callbacks: a half-handled event would be handled again, so that aborts.
  bool RunOnce();
  // Runs `work` after the current callback returns: in this iteration when deferred
  // from outside deferred work, else in the next one. Work deferred by deferred work
  // waits for a poll in between, so a chain of deferrals (a retry loop) cannot starve
  // the pollers.
  void Defer(Work work);
  // Pollers are not owned; remove one before destroying it.
  void AddPoller(Poller* poller);
  void RemovePoller(Poller* poller);
  // Wakes the loop when `fd` is readable (or hangs up) and runs `on_ready`, if given.
  absl::Status WatchFd(int fd, Work on_ready = nullptr);
  void UnwatchFd(int fd);
  TimerId RunAfter(absl::Duration delay, Work work);
  // True when the timer had not fired yet.
  bool CancelTimer(TimerId id);
  // The time at the start of the current iteration.
  Clock::time_point now() const { return now_; }
  // The same in nanoseconds since the steady clock's epoch (CLOCK_MONOTONIC's).
  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(now_.time_since_epoch()).count();
  }
  const EventLoopStats& stats() const { return stats_; }

 private:
  EventLoop(std::unique_ptr<Doorbell> doorbell, UniqueFd epoll_fd, const EventLoopOptions& options);
  int RunWork();
  int PollAll();
  int RunTimers();
  int CheckFds(int timeout_ms);
  void Park();

  std::unique_ptr<Doorbell> doorbell_;
  UniqueFd epoll_fd_;
  const Clock::duration spin_;
  const Clock::duration fd_check_interval_;
  const bool yield_while_spinning_;
  std::atomic<std::thread::id> thread_{};
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};

  Mutex posted_mu_;
  std::vector<Work> posted_ ABSL_GUARDED_BY(posted_mu_);
  std::atomic<bool> has_posted_{false};
  std::vector<Work> posted_batch_;  // posted items being run (loop thread)

  std::deque<Work> deferred_;
  std::vector<Poller*> pollers_;
  absl::flat_hash_map<int, Work> fd_callbacks_;
  std::map<std::pair<Clock::time_point, TimerId>, Work> timers_;
  absl::flat_hash_map<TimerId, Clock::time_point> timer_deadlines_;
  TimerId next_timer_ = 1;

  int depth_ = 0;  // RunOnce nesting, to refuse re-entry
  uint32_t idle_polls_ = 0;
  Clock::time_point now_{};
  Clock::time_point last_event_{};
  Clock::time_point next_fd_check_{};
  EventLoopStats stats_;
};

// Runs `fn` on `loop` and waits for it. Must not be called from the loop thread.
void RunInLoop(EventLoop& loop, absl::AnyInvocable<void()> fn);

// A thread running an EventLoop; stops and joins it on destruction.
class LoopThread {
 public:
  explicit LoopThread(std::unique_ptr<EventLoop> loop);
  ~LoopThread();
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  EventLoop& loop() { return *loop_; }

 private:
  std::unique_ptr<EventLoop> loop_;
  std::thread thread_;
};

}  // namespace farm

#endif  // FARM_EVENT_EVENT_LOOP_H_
