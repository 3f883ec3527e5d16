// CompletionRing: a fixed-capacity FIFO of completions, owned by one thread.
// The CPU backends' completion queues are built on it; capacity is the queue's depth,
// and posting checks for room first so a completion is never dropped.
#ifndef FARM_FABRIC_COMPLETION_RING_H_
#define FARM_FABRIC_COMPLETION_RING_H_

#include <algorithm>
#include <cstddef>
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

}  // namespace farm

#endif  // FARM_FABRIC_COMPLETION_RING_H_
