// StatusJoin: waits for n asynchronous results on one thread and calls `done` once,
// after the last, with the first error (OK when every result was). Not thread-safe: all
// Arrive calls on the thread that created it (a loop's continuations).
#ifndef FARM_BASE_STATUS_JOIN_H_
#define FARM_BASE_STATUS_JOIN_H_

#include <memory>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

namespace farm {

class StatusJoin {
 public:
  using Done = absl::AnyInvocable<void(const absl::Status&)>;

  // `n` results to wait for (n > 0).
  static std::shared_ptr<StatusJoin> Create(int n, Done done) {
    return std::shared_ptr<StatusJoin>(new StatusJoin(n, std::move(done)));
  }
  void Arrive(const absl::Status& s) {
    first_.Update(s);
    if (--pending_ == 0) std::exchange(done_, nullptr)(first_);
  }
  // A callback that Arrives once (keeps the join alive until then).
  static Done Part(const std::shared_ptr<StatusJoin>& join) {
    return [join](const absl::Status& s) { join->Arrive(s); };
  }

 private:
  StatusJoin(int n, Done done) : pending_(n), done_(std::move(done)) {}
  int pending_;
  absl::Status first_;
  Done done_;
};

}  // namespace farm

#endif  // FARM_BASE_STATUS_JOIN_H_
