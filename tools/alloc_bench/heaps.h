// The allocators under test, behind one shape (Handle, Alloc, Free, Poll, BlocksTaken):
//   GlibcHeap     the process's malloc/free (glibc's unless something interposed it);
//   MimallocHeap  mi_malloc/mi_free from libmimalloc, loaded at run time with dlopen
//                 (not linked: see CMakeLists.txt), described by a MimallocLibrary;
//   FarmHeap      one thread's FaRM ThreadAllocator with its own EventLoop, on a
//                 FarmMachine: one single-machine Allocator (FixedEnvironment,
//                 LocalChannel) that the threads share.
// The hot calls (Alloc, Free, Poll) are defined here so that they inline into the
// measuring loops.
#ifndef FARM_TOOLS_ALLOC_BENCH_HEAPS_H_
#define FARM_TOOLS_ALLOC_BENCH_HEAPS_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "alloc/allocator.h"
#include "alloc/epoch.h"
#include "alloc/fixed_environment.h"
#include "alloc/thread_allocator.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/doorbell.h"

#ifdef FARM_HAVE_MIMALLOC_H
#include <mimalloc.h>
#endif

namespace farm::alloc_bench {

// Prints "alloc_bench: <what>: <status>" to stderr and exits with status 1.
[[noreturn]] void Die(absl::string_view what, const absl::Status& status);

// --- glibc ---

// Where the process's malloc comes from (glibc unless something interposed it).
std::string MallocLibraryPath();

class GlibcHeap {
 public:
  using Handle = void*;
  void* Alloc(uint32_t bytes) { return std::malloc(bytes); }
  void Free(void* p) { std::free(p); }
  void Poll() {}
  uint64_t BlocksTaken() const { return 0; }
};

// --- mimalloc, loaded at run time ---

#ifdef FARM_HAVE_MIMALLOC_H
using MiMallocFn = decltype(&mi_malloc);
using MiFreeFn = decltype(&mi_free);
using MiUsableSizeFn = decltype(&mi_usable_size);
#else
using MiMallocFn = void* (*)(size_t);
using MiFreeFn = void (*)(void*);
using MiUsableSizeFn = size_t (*)(const void*);
#endif

struct MimallocLibrary {
  MiMallocFn malloc = nullptr;
  MiFreeFn free = nullptr;
  MiUsableSizeFn usable_size = nullptr;
  int version = 0;      // mi_version(): 209 is 2.0.9
  std::string path;     // the library opened (FARM_MIMALLOC_LIBRARY)
  std::string missing;  // why it cannot be used; empty when loaded
  bool loaded() const { return missing.empty(); }
};

// dlopen with RTLD_LOCAL: the library's own malloc/free exports stay out of the global
// scope, so malloc remains glibc's everywhere else in the process.
MimallocLibrary LoadMimalloc();

class MimallocHeap {
 public:
  using Handle = void*;
  explicit MimallocHeap(const MimallocLibrary& mi) : malloc_(mi.malloc), free_(mi.free) {}
  void* Alloc(uint32_t bytes) { return malloc_(bytes); }
  void Free(void* p) { free_(p); }
  void Poll() {}
  uint64_t BlocksTaken() const { return 0; }

 private:
  const MiMallocFn malloc_;
  const MiFreeFn free_;
};

// --- FaRM ---

// One machine's allocator, alone (node 1, r = 1, no fabric): what the threads share.
class FarmMachine {
 public:
  FarmMachine(uint64_t region_bytes, uint64_t capacity_bytes);

  alloc::Allocator& allocator() { return *allocator_; }
  alloc::EpochManager& epochs() { return *epochs_; }
  DoorbellTable& doorbells() { return *doorbells_; }
  // The slot size of the block `p` is in (p must be live).
  uint32_t SlotBytesOf(FatPtr p);

 private:
  std::unique_ptr<alloc::FixedEnvironment> env_;
  std::unique_ptr<alloc::EpochManager> epochs_;
  std::unique_ptr<DoorbellTable> doorbells_;
  std::unique_ptr<alloc::Allocator> allocator_;
};

// One thread's FaRM allocator with its own event loop. Create, use and destroy it on
// one thread.
class FarmHeap {
 public:
  using Handle = FatPtr;

  // With `outer_epoch`, the thread stays inside an epoch operation except in Poll, as a
  // transaction's allocations and frees would: FreeLocal's own EpochGuard then only nests.
  explicit FarmHeap(FarmMachine& machine, bool outer_epoch = false);
  ~FarmHeap();

  FatPtr Alloc(uint32_t payload) {
    std::optional<absl::StatusOr<FatPtr>> result;
    allocator_->Allocate(payload, Addr(), [&result](absl::StatusOr<FatPtr> r) { result.emplace(std::move(r)); });
    // Completes inline unless a message is needed (never with a LocalChannel).
    for (int i = 0; !result.has_value(); ++i) {
      if (i == 10'000'000) Die("Allocate", absl::DeadlineExceededError("no completion"));
      loop_->RunOnce();
    }
    if (!result->ok()) Die("Allocate", result->status());
    return **result;
  }
  void Free(FatPtr p) {
    const absl::Status s = allocator_->FreeLocal(p);
    if (!s.ok()) Die("FreeLocal", s);
  }
  // Rounds complete here (outside any operation of this thread).
  void Poll() {
    if (outer_epoch_) allocator_->epoch().Exit();
    loop_->RunOnce();
    if (outer_epoch_) allocator_->epoch().Enter();
  }
  uint64_t BlocksTaken() const {
    return allocator_->stats().blocks_acquired + allocator_->stats().blocks_adopted;
  }
  // Runs the loop until retired blocks are back with the BlockAllocator.
  void Drain();

 private:
  const bool outer_epoch_;
  // Destroyed in reverse: the ThreadAllocator before its channel, the channel before the loop.
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<alloc::LocalChannel> channel_;
  std::unique_ptr<alloc::ThreadAllocator> allocator_;
};

}  // namespace farm::alloc_bench

#endif  // FARM_TOOLS_ALLOC_BENCH_HEAPS_H_
