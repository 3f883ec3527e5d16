// LoopThreads: n event loops, each run by a thread of its own, each with a LoopContext —
// the worker threads of a protocol server tested without a node.
//
//   LoopThreads threads;
//   ASSERT_TRUE(threads.Start(2).ok());
//   RespServer::Start(threads.contexts(), ...);
#ifndef FARM_TESTS_SUPPORT_LOOP_THREADS_H_
#define FARM_TESTS_SUPPORT_LOOP_THREADS_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "farm/event/event_loop.h"
#include "farm/event/loop_context.h"
#include "farm/fabric/doorbell.h"

namespace farm::testing {

class LoopThreads {
 public:
  LoopThreads() = default;
  ~LoopThreads() { Stop(); }
  LoopThreads(const LoopThreads&) = delete;
  LoopThreads& operator=(const LoopThreads&) = delete;

  // Stops what runs, then starts n loops. `on_loop(i, loop)` runs for each before its
  // thread starts (e.g. to make a store that posts to that loop).
  template <typename OnLoop>
  absl::Status Start(size_t n, OnLoop on_loop) {
    Stop();
    absl::StatusOr<std::unique_ptr<DoorbellTable>> table = DoorbellTable::Create(static_cast<uint32_t>(n) + 2);
    if (!table.ok()) return table.status();
    doorbells_ = std::move(*table);
    for (size_t i = 0; i < n; ++i) {
      absl::StatusOr<std::unique_ptr<Doorbell>> bell = doorbells_->Allocate();
      if (!bell.ok()) return bell.status();
      absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(std::move(*bell));
      if (!loop.ok()) return loop.status();
      on_loop(i, loop->get());
      threads_.push_back(std::make_unique<LoopThread>(std::move(*loop)));
      contexts_.push_back(std::make_unique<LoopContext>(&threads_.back()->loop(), i));
    }
    return absl::OkStatus();
  }
  absl::Status Start(size_t n) {
    return Start(n, [](size_t, EventLoop*) {});
  }
  // Stops and joins the threads (their contexts go first).
  void Stop() {
    contexts_.clear();
    threads_.clear();
  }

  std::vector<Context*> contexts() const {
    std::vector<Context*> out;
    for (const auto& c : contexts_) out.push_back(c.get());
    return out;
  }

 private:
  std::unique_ptr<DoorbellTable> doorbells_;
  std::vector<std::unique_ptr<LoopThread>> threads_;
  std::vector<std::unique_ptr<LoopContext>> contexts_;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_LOOP_THREADS_H_
