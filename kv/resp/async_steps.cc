#include "kv/resp/async_steps.h"

#include <memory>
#include <utility>

namespace farm::kv::resp {
namespace {

struct Steps {
  size_t n = 0;
  size_t next = 0;  // the step to run
  std::function<void(size_t, absl::AnyInvocable<void()>)> step;
  absl::AnyInvocable<void()> finish;
  bool in_step = false;   // inside step(): an inline next() only records progress
  bool advanced = false;  // next() was called inside step()
};

void Drive(const std::shared_ptr<Steps>& s) {
  while (s->next < s->n) {
    s->in_step = true;
    s->advanced = false;
    s->step(s->next, [s] {
      ++s->next;
      if (s->in_step) {
        s->advanced = true;
      } else {
        Drive(s);
      }
    });
    s->in_step = false;
    if (!s->advanced) return;  // the step finishes later and drives on from there
  }
  absl::AnyInvocable<void()> finish = std::move(s->finish);
  s->step = nullptr;  // drop captures before finishing
  if (finish) finish();
}

}  // namespace

void RunSequentially(size_t n, std::function<void(size_t i, absl::AnyInvocable<void()> next)> step,
                     absl::AnyInvocable<void()> finish) {
  auto s = std::make_shared<Steps>();
  s->n = n;
  s->step = std::move(step);
  s->finish = std::move(finish);
  Drive(s);
}

}  // namespace farm::kv::resp
