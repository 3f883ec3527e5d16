// RunSequentially: runs asynchronous steps one after another with constant stack depth,
// whether each step finishes inside its call (a local command, an argument error) or
// later (a store callback).
#ifndef FARM_KV_RESP_ASYNC_STEPS_H_
#define FARM_KV_RESP_ASYNC_STEPS_H_

#include <cstddef>
#include <functional>

#include "absl/functional/any_invocable.h"

namespace farm::kv::resp {

// Calls step(i, next) for i = 0 .. n-1 in order; step must call next() exactly once,
// inside the call or later, to move on. After the last step (or at once when n == 0)
// calls finish(). Whatever step and finish capture lives until finish has run.
void RunSequentially(size_t n, std::function<void(size_t i, absl::AnyInvocable<void()> next)> step,
                     absl::AnyInvocable<void()> finish);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_ASYNC_STEPS_H_
