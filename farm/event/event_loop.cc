#include "farm/event/event_loop.h"

#include <sched.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "farm/base/log.h"
#include "farm/base/mutex.h"

namespace farm {
namespace {

EventLoop::Clock::duration ToClock(absl::Duration d) {
  return std::chrono::duration_cast<EventLoop::Clock::duration>(absl::ToChronoNanoseconds(d));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventLoop>> EventLoop::Create(std::unique_ptr<Doorbell> doorbell,
                                                             const EventLoopOptions& options) {
  if (doorbell == nullptr) return absl::InvalidArgumentError("an event loop needs a doorbell");
  UniqueFd epfd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epfd.valid()) return absl::ErrnoToStatus(errno, "epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = doorbell->fd();
  if (::epoll_ctl(epfd.get(), EPOLL_CTL_ADD, doorbell->fd(), &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(doorbell)");
  }
  return std::unique_ptr<EventLoop>(new EventLoop(std::move(doorbell), std::move(epfd), options));
}

EventLoop::EventLoop(std::unique_ptr<Doorbell> doorbell, UniqueFd epoll_fd,
                     const EventLoopOptions& options)
    : doorbell_(std::move(doorbell)),
      epoll_fd_(std::move(epoll_fd)),
      spin_(ToClock(options.spin)),
      fd_check_interval_(ToClock(options.fd_check_interval)),
      yield_while_spinning_(options.yield_while_spinning) {}

EventLoop::~EventLoop() = default;

void EventLoop::Post(Work work) {
  {
    MutexLock lock(&posted_mu_);
    posted_.push_back(std::move(work));
    has_posted_.store(true, std::memory_order_release);
  }
  doorbell_->Ring();
}

void EventLoop::Stop() {
  stop_.store(true, std::memory_order_release);
  doorbell_->Ring();
}

void EventLoop::Run() {
  thread_.store(std::this_thread::get_id());
  running_.store(true, std::memory_order_release);
  now_ = Clock::now();
  last_event_ = now_;
  while (!stop_.load(std::memory_order_acquire)) {
    if (RunOnce()) {
      last_event_ = now_;
    } else if (now_ - last_event_ >= spin_) {
      Park();
      last_event_ = Clock::now();
    } else if (yield_while_spinning_ && (++idle_polls_ & 7) == 0) {
      sched_yield();  // every 8th empty poll: others get the core, a message is seen fast
    }
  }
  running_.store(false, std::memory_order_release);
}

bool EventLoop::RunOnce() {
  if (depth_ > 0) {
    FARM_LOG(kError, "EventLoop::RunOnce called from inside one of the loop's callbacks");
    std::abort();
  }
  ++depth_;
  if (thread_.load() == std::thread::id()) thread_.store(std::this_thread::get_id());
  now_ = Clock::now();
  ++stats_.iterations;
  int events = RunWork() + PollAll() + RunTimers();
  if (now_ >= next_fd_check_) {
    next_fd_check_ = now_ + fd_check_interval_;
    events += CheckFds(0);
  }
  stats_.events += static_cast<uint64_t>(events);
  --depth_;
  return events > 0;
}

int EventLoop::RunWork() {
  int ran = 0;
  if (has_posted_.load(std::memory_order_acquire)) {
    {
      MutexLock lock(&posted_mu_);
      posted_batch_.swap(posted_);
      has_posted_.store(false, std::memory_order_relaxed);
    }
    for (Work& work : posted_batch_) {
      work();
      ++ran;
    }
    posted_batch_.clear();
  }
  // Only what was deferred before this point: work deferred by it runs next iteration,
  // after the pollers.
  for (size_t n = deferred_.size(); n > 0; --n) {
    Work work = std::move(deferred_.front());
    deferred_.pop_front();
    work();
    ++ran;
  }
  return ran;
}

void EventLoop::Defer(Work work) { deferred_.push_back(std::move(work)); }

void EventLoop::AddPoller(Poller* poller) { pollers_.push_back(poller); }

void EventLoop::RemovePoller(Poller* poller) {
  // Pollers may remove themselves (or others) while being polled: null the slot now,
  // compact after the sweep.
  std::replace(pollers_.begin(), pollers_.end(), poller, static_cast<Poller*>(nullptr));
}

int EventLoop::PollAll() {
  int events = 0;
  bool removed = false;
  for (size_t i = 0; i < pollers_.size(); ++i) {
    if (pollers_[i] == nullptr) {
      removed = true;
      continue;
    }
    events += pollers_[i]->Poll();
  }
  if (removed) std::erase(pollers_, nullptr);
  return events;
}

EventLoop::TimerId EventLoop::RunAfter(absl::Duration delay, Work work) {
  const Clock::time_point deadline = Clock::now() + ToClock(delay);
  const TimerId id = next_timer_++;
  timers_.emplace(std::make_pair(deadline, id), std::move(work));
  timer_deadlines_.emplace(id, deadline);
  return id;
}

bool EventLoop::CancelTimer(TimerId id) {
  auto it = timer_deadlines_.find(id);
  if (it == timer_deadlines_.end()) return false;
  timers_.erase(std::make_pair(it->second, id));
  timer_deadlines_.erase(it);
  return true;
}

int EventLoop::RunTimers() {
  int fired = 0;
  while (!timers_.empty() && timers_.begin()->first.first <= now_) {
    auto node = timers_.extract(timers_.begin());
    timer_deadlines_.erase(node.key().second);
    node.mapped()();
    ++fired;
  }
  return fired;
}

absl::Status EventLoop::WatchFd(int fd, Work on_ready) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(ADD)");
  }
  fd_callbacks_[fd] = std::move(on_ready);
  return absl::OkStatus();
}

void EventLoop::UnwatchFd(int fd) {
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  fd_callbacks_.erase(fd);
}

int EventLoop::CheckFds(int timeout_ms) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  const int n = ::epoll_wait(epoll_fd_.get(), events, kMaxEvents, timeout_ms);
  int ran = 0;
  for (int i = 0; i < n; ++i) {
    auto it = fd_callbacks_.find(events[i].data.fd);
    if (it != fd_callbacks_.end() && it->second) {
      it->second();
      ++ran;
    }
  }
  return ran;
}

void EventLoop::Park() {
  doorbell_->Arm();
  for (Poller* p : pollers_) {
    if (p != nullptr) p->PrepareToPark();
  }
  // Invariant 1: everything a producer may have published before seeing us armed.
  // The pollers run first: a continuation they run may defer work (and a poller may not
  // count that as an event), so the deferred queue is looked at after them.
  const int polled = PollAll();
  const bool busy = polled > 0 || stop_.load(std::memory_order_acquire) ||
                    has_posted_.load(std::memory_order_acquire) || !deferred_.empty();
  if (!busy) {
    Clock::time_point wake = timers_.empty() ? Clock::time_point::max() : timers_.begin()->first.first;
    for (const Poller* p : pollers_) {
      if (p != nullptr) wake = std::min(wake, p->NextDeadline());
    }
    int timeout_ms = -1;
    if (wake != Clock::time_point::max()) {
      const auto wait = wake - Clock::now();
      timeout_ms = static_cast<int>(std::max<int64_t>(
          0, std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
    }
    ++stats_.parks;
    CheckFds(timeout_ms);
  }
  doorbell_->Disarm();
}

void RunInLoop(EventLoop& loop, absl::AnyInvocable<void()> fn) {
  if (loop.InLoopThread()) {
    fn();
    return;
  }
  Notification done;
  loop.Post([&] {
    fn();
    done.Notify();
  });
  done.WaitForNotification();
}

LoopThread::LoopThread(std::unique_ptr<EventLoop> loop) : loop_(std::move(loop)) {
  thread_ = std::thread([l = loop_.get()] { l->Run(); });
}

LoopThread::~LoopThread() {
  loop_->Stop();
  thread_.join();
}

}  // namespace farm
