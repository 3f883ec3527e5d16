// co_await JoinAll(tasks) -> absl::Status, the first error: runs the tasks at once
// (spawned on this thread) and resumes the caller when every one has finished.
//
// Threads: a worker thread's coroutine; the tasks run on that thread. The awaiter owns
// the tasks until they are spawned and the join's state until the last one finishes.
#ifndef FARM_GRAPH_JOIN_ALL_H_
#define FARM_GRAPH_JOIN_ALL_H_

#include <coroutine>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "farm/api/coro.h"

namespace farm::graph {

class JoinAll {
 public:
  explicit JoinAll(std::vector<Task<absl::Status>> tasks) : tasks_(std::move(tasks)) {}
  bool await_ready() const noexcept { return tasks_.empty(); }
  bool await_suspend(std::coroutine_handle<> h) {
    state_->waiter = h;
    state_->left = tasks_.size() + 1;  // +1 until every task is spawned
    for (Task<absl::Status>& t : tasks_) {
      Spawn(std::move(t), [state = state_](absl::Status s) {
        if (!s.ok() && state->error.ok()) state->error = s;
        if (--state->left == 0) state->waiter.resume();
      });
    }
    return --state_->left != 0;  // all done already (never, as continuations are deferred)
  }
  absl::Status await_resume() { return state_->error; }

 private:
  struct State {
    std::coroutine_handle<> waiter;
    size_t left = 0;
    absl::Status error;
  };
  std::vector<Task<absl::Status>> tasks_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_JOIN_ALL_H_
