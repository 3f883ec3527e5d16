// CompletionRing: a fixed-capacity FIFO of completions, owned by one thread.
// The CPU backends' completion queues are built on it; capacity is the queue's depth,
// and posting checks for room first so a completion is never dropped.
#ifndef FARM_FABRIC_COMPLETION_RING_H_
#define FARM_FABRIC_COMPLETION_RING_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "farm/fabric/work_request.h"

namespace farm {

class CompletionRing {
 public:
  explicit CompletionRing(size_t capacity) : slots_(capacity) {}

  size_t capacity() const { return slots_.size(); }
  size_t size() const { return size_; }
  size_t free() const { return capacity() - size_; }

  // Precondition: free() > 0.
  void Push(const Completion& c) {
    slots_[tail_] = c;
    if (++tail_ == slots_.size()) tail_ = 0;  // no division on the hot path
    ++size_;
  }

  int PopInto(absl::Span<Completion> out) {
    const size_t n = std::min(out.size(), size_);
    for (size_t i = 0; i < n; ++i) {
      out[i] = slots_[head_];
      if (++head_ == slots_.size()) head_ = 0;
    }
    size_ -= n;
    return static_cast<int>(n);
  }

 private:
  std::vector<Completion> slots_;
  size_t head_ = 0;
  size_t tail_ = 0;
  size_t size_ = 0;
};

// The completions a completion queue holds for its owner, with the claims of posted
// requests that have not finished yet: every posted op holds a claim until it does,
// since even an unsignaled op may fail, so a post that cannot claim fails instead of a
// completion being dropped. Room for `disconnect_reserve` kDisconnect notices (one per
// endpoint) lies beyond the depth. The backends' completion queues build on it.
// Owning thread only.
class ClaimedCompletions {
 public:
  ClaimedCompletions(uint32_t depth, uint32_t disconnect_reserve)
      : depth_(depth), ring_(size_t{depth} + disconnect_reserve) {}

  // Claims room for the completion of one op about to be posted. False when the queue
  // is full: the post must fail with ResourceExhausted.
  bool Claim() {
    if (ring_.size() + claimed_ >= depth_) return false;
    ++claimed_;
    return true;
  }
  // Finishes a claimed op: delivers `c`, or nothing for a successful unsignaled op.
  void Complete(const Completion* c) {
    --claimed_;
    if (c != nullptr) ring_.Push(*c);
  }
  // An endpoint's kDisconnect notice, in the reserved room.
  void PushDisconnect(const Completion& c) {
    if (ring_.free() > 0) ring_.Push(c);
  }

 protected:
  int PopCompletions(absl::Span<Completion> out) { return ring_.PopInto(out); }

 private:
  const uint32_t depth_;
  CompletionRing ring_;
  uint32_t claimed_ = 0;
};

// When a completion queue's liveness check of its endpoints' sockets is due: at most
// every `interval`, and the clock is read only on every 32nd poll. Owning thread only.
class LivenessSchedule {
 public:
  explicit LivenessSchedule(std::chrono::steady_clock::duration interval) : interval_(interval) {}
  bool Due() {
    if ((++polls_ & 31) != 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return false;
    next_ = now + interval_;
    return true;
  }

 private:
  const std::chrono::steady_clock::duration interval_;
  uint32_t polls_ = 0;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace farm

#endif  // FARM_FABRIC_COMPLETION_RING_H_
