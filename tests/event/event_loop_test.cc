#include "farm/event/event_loop.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "farm/base/mutex.h"
#include "gtest/gtest.h"

namespace farm {
namespace {

class EventLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto table = DoorbellTable::Create(8);
    ASSERT_TRUE(table.ok());
    doorbells_ = std::move(*table);
  }
  std::unique_ptr<EventLoop> MakeLoop(EventLoopOptions options = {}) {
    auto bell = doorbells_->Allocate();
    EXPECT_TRUE(bell.ok());
    auto loop = EventLoop::Create(std::move(*bell), options);
    EXPECT_TRUE(loop.ok());
    return std::move(*loop);
  }
  std::unique_ptr<DoorbellTable> doorbells_;
};

// A pipe whose read end a loop watches; Notified() once it has been readable.
class WatchedPipe {
 public:
  explicit WatchedPipe(EventLoop& loop) : loop_(loop) {
    EXPECT_EQ(::pipe2(fds_, O_NONBLOCK | O_CLOEXEC), 0);
    RunInLoop(loop_, [this] {
      ASSERT_TRUE(loop_.WatchFd(fds_[0], [this] {
                         char c;
                         while (::read(fds_[0], &c, 1) == 1) {
                         }
                         if (!readable_.HasBeenNotified()) readable_.Notify();
                       }).ok());
    });
  }
  ~WatchedPipe() {
    RunInLoop(loop_, [this] { loop_.UnwatchFd(fds_[0]); });
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  void Write() { ASSERT_EQ(::write(fds_[1], "x", 1), 1); }
  bool WaitReadable() { return readable_.WaitForNotificationWithTimeout(absl::Seconds(5)); }

 private:
  EventLoop& loop_;
  int fds_[2];
  Notification readable_;
};

// CPU time this process has used, user + system.
absl::Duration ProcessCpuTime() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return absl::DurationFromTimeval(ru.ru_utime) + absl::DurationFromTimeval(ru.ru_stime);
}

TEST_F(EventLoopTest, PostedWorkRunsOnTheLoopThreadInPostOrder) {
  LoopThread thread(MakeLoop());
  EventLoop& loop = thread.loop();
  constexpr int kProducers = 3, kItems = 2000;
  std::vector<std::vector<int>> seen(kProducers);  // touched only on the loop thread
  std::atomic<int> off_thread{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kItems; ++i) {
        loop.Post([&, p, i] {
          if (!loop.InLoopThread()) off_thread++;
          seen[p].push_back(i);
        });
      }
    });
  }
  for (auto& t : producers) t.join();
  RunInLoop(loop, [] {});  // everything posted before this has run
  EXPECT_EQ(off_thread.load(), 0);
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(kItems));
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(seen[p][i], i);
  }
}

TEST_F(EventLoopTest, IdleLoopParksInsteadOfSpinning) {
  EventLoopOptions options;
  options.spin = absl::Microseconds(50);
  LoopThread thread(MakeLoop(options));
  absl::SleepFor(absl::Milliseconds(50));
  const absl::Duration before = ProcessCpuTime();
  absl::SleepFor(absl::Milliseconds(400));
  const absl::Duration used = ProcessCpuTime() - before;
  EXPECT_LT(used, absl::Milliseconds(40)) << "an idle loop burned " << used << " of CPU in 400ms";
  // And it still wakes for work.
  Notification ran;
  thread.loop().Post([&] { ran.Notify(); });
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

TEST_F(EventLoopTest, ParkedLoopWakesForPostTimerAndDescriptor) {
  LoopThread thread(MakeLoop());
  EventLoop& loop = thread.loop();
  absl::SleepFor(absl::Milliseconds(20));  // let it park

  Notification timer_fired;
  RunInLoop(loop, [&] { loop.RunAfter(absl::Milliseconds(30), [&] { timer_fired.Notify(); }); });
  EXPECT_TRUE(timer_fired.WaitForNotificationWithTimeout(absl::Seconds(5)));

  {
    WatchedPipe pipe(loop);
    absl::SleepFor(absl::Milliseconds(20));
    pipe.Write();
    EXPECT_TRUE(pipe.WaitReadable());
  }
  uint64_t parks = 0;
  RunInLoop(loop, [&] { parks = loop.stats().parks; });
  EXPECT_GT(parks, 0u);
}

// A poller that always has work keeps the loop busy; descriptors are still checked.
class BusyPoller : public Poller {
 public:
  int Poll() override {
    ++polls;
    return 1;
  }
  uint64_t polls = 0;
};

TEST_F(EventLoopTest, BusyLoopStillChecksDescriptors) {
  LoopThread thread(MakeLoop());
  EventLoop& loop = thread.loop();
  BusyPoller busy;
  RunInLoop(loop, [&] { loop.AddPoller(&busy); });
  {
    WatchedPipe pipe(loop);
    pipe.Write();
    EXPECT_TRUE(pipe.WaitReadable());
  }
  RunInLoop(loop, [&] {
    loop.RemovePoller(&busy);
    EXPECT_GT(busy.polls, 0u);
  });
}

TEST_F(EventLoopTest, TimersFireInDeadlineOrderAndCancelledOnesNever) {
  std::unique_ptr<EventLoop> loop = MakeLoop();
  std::vector<int> fired;
  loop->RunAfter(absl::Milliseconds(30), [&] { fired.push_back(3); });
  loop->RunAfter(absl::Milliseconds(10), [&] { fired.push_back(1); });
  const EventLoop::TimerId cancelled = loop->RunAfter(absl::Milliseconds(20), [&] { fired.push_back(2); });
  EXPECT_TRUE(loop->CancelTimer(cancelled));
  EXPECT_FALSE(loop->CancelTimer(cancelled));
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (fired.size() < 2 && absl::Now() < deadline) loop->RunOnce();
  absl::SleepFor(absl::Milliseconds(30));
  loop->RunOnce();
  EXPECT_EQ(fired, (std::vector<int>{1, 3}));
}

class SelfRemovingPoller : public Poller {
 public:
  explicit SelfRemovingPoller(EventLoop* loop) : loop_(loop) {}
  int Poll() override {
    if (++polls == 3) loop_->RemovePoller(this);
    return 0;
  }
  EventLoop* loop_;
  int polls = 0;
};

TEST_F(EventLoopTest, PollersMayRemoveThemselvesWhilePolled) {
  std::unique_ptr<EventLoop> loop = MakeLoop();
  SelfRemovingPoller a(loop.get()), b(loop.get());
  loop->AddPoller(&a);
  loop->AddPoller(&b);
  for (int i = 0; i < 10; ++i) loop->RunOnce();
  EXPECT_EQ(a.polls, 3);
  EXPECT_EQ(b.polls, 3);
}

TEST_F(EventLoopTest, DeferredWorkRunsBeforeTheNextPoll) {
  std::unique_ptr<EventLoop> loop = MakeLoop();
  std::vector<int> order;
  loop->Post([&] {
    order.push_back(1);
    loop->Defer([&] { order.push_back(3); });
    order.push_back(2);
  });
  loop->RunOnce();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_F(EventLoopTest, AChainOfDeferralsCannotStarveThePollers) {
  // A retry loop that defers itself forever: the pollers still run every iteration.
  std::unique_ptr<EventLoop> loop = MakeLoop();
  BusyPoller poller;
  loop->AddPoller(&poller);
  int runs = 0;
  std::function<void()> again = [&] {
    ++runs;
    loop->Defer(again);
  };
  loop->Post(again);
  for (int i = 0; i < 5; ++i) loop->RunOnce();
  // The posted link and its first deferral share iteration 1; then one per iteration.
  EXPECT_EQ(runs, 6);
  EXPECT_EQ(poller.polls, 5u);
  loop->RemovePoller(&poller);
}

// A poller that defers work from inside its `nth` Poll and reports no event, as a
// completion queue does when a continuation it runs starts the next operation.
class DeferringPoller : public Poller {
 public:
  DeferringPoller(EventLoop* loop, int nth) : loop_(loop), nth_(nth) {}
  int Poll() override {
    if (++polls_ == nth_) loop_->Defer([this] { ran_.Notify(); });
    return 0;
  }
  bool WaitRan() { return ran_.WaitForNotificationWithTimeout(absl::Seconds(2)); }

 private:
  EventLoop* loop_;
  const int nth_;
  int polls_ = 0;
  Notification ran_;
};

TEST_F(EventLoopTest, WorkDeferredByAPollerWhileParkingStillRuns) {
  // Regression: Park looked at the deferred queue before its last poll, so work a
  // poller deferred in that poll waited for an unrelated wake-up (kv lookups on tcp
  // stalled for up to a minute). With no spin and nothing to do, a new loop polls once
  // in its first iteration and once more in Park, then sleeps: deferring in either poll
  // must keep it awake.
  EventLoopOptions options;
  options.spin = absl::ZeroDuration();
  for (int nth = 1; nth <= 2; ++nth) {
    std::unique_ptr<EventLoop> loop = MakeLoop(options);
    DeferringPoller poller(loop.get(), nth);
    loop->AddPoller(&poller);
    std::thread runner([&] { loop->Run(); });
    EXPECT_TRUE(poller.WaitRan()) << "work deferred in poll " << nth << " never ran";
    loop->Stop();
    runner.join();
  }
}

TEST_F(EventLoopTest, ReenteringTheLoopFromItsOwnCallbackAborts) {
  std::unique_ptr<EventLoop> loop = MakeLoop();
  loop->Post([&] { loop->RunOnce(); });
  EXPECT_DEATH(loop->RunOnce(), "inside one of the loop's callbacks");
}

TEST_F(EventLoopTest, StopEndsAParkedRun) {
  std::unique_ptr<EventLoop> loop = MakeLoop();
  std::thread runner([&] { loop->Run(); });
  absl::SleepFor(absl::Milliseconds(30));
  loop->Stop();
  runner.join();  // hangs if Stop did not wake the parked loop
}

}  // namespace
}  // namespace farm
