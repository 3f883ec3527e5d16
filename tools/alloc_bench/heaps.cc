#include "tools/alloc_bench/heaps.h"

#include <dlfcn.h>

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "alloc/slab_block.h"

namespace farm::alloc_bench {

void Die(absl::string_view what, const absl::Status& status) {
  std::fprintf(stderr, "alloc_bench: %s: %s\n", std::string(what).c_str(), status.ToString().c_str());
  std::exit(1);
}

std::string MallocLibraryPath() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&::malloc), &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "unknown";
}

MimallocLibrary LoadMimalloc() {
  MimallocLibrary mi;
#ifndef FARM_MIMALLOC_LIBRARY
  mi.missing = "libmimalloc was not found when the build was configured (install "
               "libmimalloc-dev, as deploy/install-deps.sh does, and re-run cmake)";
#else
  mi.path = FARM_MIMALLOC_LIBRARY;
  void* handle = ::dlopen(FARM_MIMALLOC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    mi.missing = absl::StrCat("dlopen failed: ", ::dlerror());
    return mi;
  }
  mi.malloc = reinterpret_cast<MiMallocFn>(::dlsym(handle, "mi_malloc"));
  mi.free = reinterpret_cast<MiFreeFn>(::dlsym(handle, "mi_free"));
  mi.usable_size = reinterpret_cast<MiUsableSizeFn>(::dlsym(handle, "mi_usable_size"));
  auto version = reinterpret_cast<int (*)()>(::dlsym(handle, "mi_version"));
  if (mi.malloc == nullptr || mi.free == nullptr || mi.usable_size == nullptr) {
    mi.missing = absl::StrCat(FARM_MIMALLOC_LIBRARY, " lacks mi_malloc/mi_free/mi_usable_size");
  }
  if (version != nullptr) mi.version = version();
#endif
  return mi;
}

FarmMachine::FarmMachine(uint64_t region_bytes, uint64_t capacity_bytes) {
  absl::StatusOr<std::unique_ptr<alloc::FixedEnvironment>> env = alloc::FixedEnvironment::Create({1});
  if (!env.ok()) Die("FixedEnvironment", env.status());
  env_ = std::move(*env);
  epochs_ = std::make_unique<alloc::EpochManager>();
  alloc::AllocatorOptions options;  // default RegionOptions, as a node uses
  options.self = 1;
  options.region_bytes = region_bytes;
  options.capacity_bytes = capacity_bytes;
  absl::StatusOr<std::unique_ptr<alloc::Allocator>> a =
      alloc::Allocator::Create(options, env_.get(), epochs_.get());
  if (!a.ok()) Die("Allocator::Create", a.status());
  allocator_ = std::move(*a);
  absl::StatusOr<std::unique_ptr<DoorbellTable>> bells = DoorbellTable::Create(64);
  if (!bells.ok()) Die("DoorbellTable::Create", bells.status());
  doorbells_ = std::move(*bells);
}

uint32_t FarmMachine::SlotBytesOf(FatPtr p) {
  alloc::LocalRegion* r = allocator_->blocks().FindRegion(p.addr.region());
  alloc::SlabBlock* b = r == nullptr ? nullptr : r->BlockAt(p.addr.offset());
  return b == nullptr ? 0 : b->slot_bytes();
}

FarmHeap::FarmHeap(FarmMachine& machine, bool outer_epoch) : outer_epoch_(outer_epoch) {
  absl::StatusOr<std::unique_ptr<Doorbell>> bell = machine.doorbells().Allocate();
  if (!bell.ok()) Die("Doorbell", bell.status());
  absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(std::move(*bell));
  if (!loop.ok()) Die("EventLoop::Create", loop.status());
  loop_ = std::move(*loop);
  channel_ = std::make_unique<alloc::LocalChannel>(&machine.epochs(), loop_.get());
  absl::StatusOr<std::unique_ptr<alloc::ThreadAllocator>> a = machine.allocator().NewThread(channel_.get());
  if (!a.ok()) Die("Allocator::NewThread", a.status());
  allocator_ = std::move(*a);
  if (outer_epoch_) allocator_->epoch().Enter();
}

FarmHeap::~FarmHeap() {
  if (outer_epoch_) allocator_->epoch().Exit();
  Drain();
}

void FarmHeap::Drain() {
  for (int i = 0; i < 1'000'000 && (allocator_->round_running() || allocator_->retired_blocks() > 0);
       ++i) {
    allocator_->Reclaim();
    loop_->RunOnce();
  }
}

}  // namespace farm::alloc_bench
