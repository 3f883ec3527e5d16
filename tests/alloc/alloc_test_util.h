// Helpers for allocator tests: a single-machine allocator and per-thread allocators
// with their own event loop (rounds complete on it), and synchronous wrappers.
#ifndef FARM_TESTS_ALLOC_ALLOC_TEST_UTIL_H_
#define FARM_TESTS_ALLOC_ALLOC_TEST_UTIL_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "alloc/allocator.h"
#include "alloc/epoch.h"
#include "alloc/fixed_environment.h"
#include "alloc/thread_allocator.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/doorbell.h"
#include "gtest/gtest.h"

namespace farm::alloc::testing {

// One thread's allocator with a loop the thread drives by hand (RunOnce).
struct TestThread {
  std::unique_ptr<EventLoop> loop;
  std::unique_ptr<LocalChannel> channel;
  std::unique_ptr<ThreadAllocator> allocator;

  // Allocate, expecting completion without waiting for messages.
  absl::StatusOr<FatPtr> Alloc(uint64_t payload, Addr hint = {}) {
    std::optional<absl::StatusOr<FatPtr>> result;
    allocator->Allocate(payload, hint, [&](absl::StatusOr<FatPtr> r) { result = std::move(r); });
    if (!result.has_value()) return absl::InternalError("allocation did not complete at once");
    return *result;
  }
  absl::Status Free(FatPtr p) { return allocator->FreeLocal(p); }
  // Runs the loop until `pred` or `iterations` run out.
  template <typename Pred>
  bool RunUntil(Pred pred, int iterations = 200000) {
    for (int i = 0; i < iterations && !pred(); ++i) loop->RunOnce();
    return pred();
  }
};

// A machine alone: node 1, a fixed placement, regions of `region_bytes`.
class SingleMachine {
 public:
  explicit SingleMachine(uint64_t region_bytes = 32 << 20, uint64_t capacity_bytes = 0,
                         uint32_t rings = 100) {
    env_ = *FixedEnvironment::Create({1}, 1, rings);
    epochs_ = std::make_unique<EpochManager>();
    AllocatorOptions options;
    options.self = 1;
    options.region_bytes = region_bytes;
    options.capacity_bytes = capacity_bytes;
    options.region.huge_pages = HugePages::kNone;
    absl::StatusOr<std::unique_ptr<Allocator>> a = Allocator::Create(options, env_.get(), epochs_.get());
    EXPECT_TRUE(a.ok()) << a.status();
    allocator_ = std::move(*a);
    doorbells_ = *DoorbellTable::Create(64);
  }

  std::unique_ptr<TestThread> NewThread() {
    auto t = std::make_unique<TestThread>();
    t->loop = *EventLoop::Create(*doorbells_->Allocate());
    t->channel = std::make_unique<LocalChannel>(epochs_.get(), t->loop.get());
    t->allocator = *allocator_->NewThread(t->channel.get());
    return t;
  }

  Allocator& allocator() { return *allocator_; }
  EpochManager& epochs() { return *epochs_; }
  FixedEnvironment& env() { return *env_; }

 private:
  std::unique_ptr<FixedEnvironment> env_;
  std::unique_ptr<EpochManager> epochs_;
  std::unique_ptr<DoorbellTable> doorbells_;
  std::unique_ptr<Allocator> allocator_;
};

}  // namespace farm::alloc::testing

#endif  // FARM_TESTS_ALLOC_ALLOC_TEST_UTIL_H_
