// LoopContext: a Context over a bare EventLoop — no node, no transactions (Context::
// transactional() is false). For a service's protocol server in tests and tools that
// run it without a cluster.
#ifndef FARM_EVENT_LOOP_CONTEXT_H_
#define FARM_EVENT_LOOP_CONTEXT_H_

#include "farm/event/context.h"
#include "farm/event/event_loop.h"

namespace farm {

class LoopContext final : public Context {
 public:
  // `loop` outlives the context.
  LoopContext(EventLoop* loop, size_t thread_index) : loop_(loop), index_(thread_index) {}

  NodeId self() const override { return 0; }
  size_t thread_index() const override { return index_; }
  bool transactional() const override { return false; }
  std::vector<NodeId> members() const override { return {}; }
  void Post(Work work) override { loop_->Post(std::move(work)); }
  void Defer(Work work) override { loop_->Defer(std::move(work)); }
  TimerId RunAfter(absl::Duration delay, Work work) override {
    return loop_->RunAfter(delay, std::move(work));
  }
  bool CancelTimer(TimerId id) override { return loop_->CancelTimer(id); }
  absl::Status WatchFd(int fd, Work on_ready) override {
    return loop_->WatchFd(fd, std::move(on_ready));
  }
  void UnwatchFd(int fd) override { loop_->UnwatchFd(fd); }

 private:
  EventLoop* const loop_;
  const size_t index_;
};

}  // namespace farm

#endif  // FARM_EVENT_LOOP_CONTEXT_H_
