// alloc_bench: FaRM's allocator (alloc/) against glibc malloc and mimalloc on this
// machine, in one run. It prints three parts:
//
//   1. Rate. Alloc+free pairs per second per thread for payloads of 16, 64, 256 and
//      1024 bytes and a mix (uniform 16..1024), with 1 and 2 threads, in two patterns:
//        batch        allocate --objects objects, free them all in the same order, repeat;
//        interleaved  keep --objects objects live; each step frees a random one and
//                     allocates its replacement (a steady state).
//      FaRM goes through the public ThreadAllocator API (Allocate with a continuation,
//      FreeLocal): one single-machine Allocator (FixedEnvironment, LocalChannel), and per
//      thread its own EventLoop, driven with RunOnce after every --objects pairs so that
//      end-of-epoch rounds complete, and its own ThreadAllocator. glibc goes through
//      malloc/free, mimalloc through mi_malloc/mi_free (loaded with dlopen, not linked:
//      see CMakeLists.txt). Each figure: a warm-up, then --repeat timed runs of
//      --seconds, both threads at once; the median run is reported.
//   2. Internal fragmentation of the size classes: FragmentationOver against the
//      paper's 1.8% / 3.6%, a log-uniform-weighted average computed from SlotSizes(),
//      and an empirical check that allocates objects and reads their slot size back.
//   3. Memory per object: region bytes per object split into header + line versions,
//      internal fragmentation and the block tail, the node-private metadata, and
//      glibc's and mimalloc's cost for the same payloads.
//
// Run (about 25 s with the defaults; figures are noisy on a shared machine, see the load
// average on the first line):
//   build/tools/alloc_bench/alloc_bench
//   alloc_bench --seconds=0.5 --repeat=5                       steadier figures
//   alloc_bench --parts=rate --heaps=farm --workloads=1024     one column, e.g. under perf
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "alloc/allocator.h"
#include "alloc/epoch.h"
#include "alloc/fixed_environment.h"
#include "alloc/size_classes.h"
#include "alloc/slab_block.h"
#include "alloc/thread_allocator.h"
#include "farm/base/object_layout.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/doorbell.h"

#ifdef FARM_HAVE_MIMALLOC_H
#include <mimalloc.h>
#endif

ABSL_FLAG(std::vector<std::string>, parts,
          (std::vector<std::string>{"rate", "fragmentation", "overhead"}), "what to print");
ABSL_FLAG(std::vector<std::string>, heaps, (std::vector<std::string>{"farm", "glibc", "mimalloc"}),
          "allocators to measure in the rate part");
ABSL_FLAG(std::vector<std::string>, workloads,
          (std::vector<std::string>{"16", "64", "256", "1024", "mixed"}),
          "payload sizes in bytes, or 'mixed' (uniform 16..1024)");
ABSL_FLAG(std::vector<std::string>, patterns, (std::vector<std::string>{"batch", "interleaved"}),
          "batch: allocate --objects, free them all, repeat; interleaved: replace a random "
          "live object per step");
ABSL_FLAG(std::vector<std::string>, threads, (std::vector<std::string>{"1", "2"}),
          "thread counts (each thread runs the whole workload on its own objects)");
ABSL_FLAG(double, seconds, 0.07, "duration of each timed run");
ABSL_FLAG(int, repeat, 5, "timed runs per figure; the median run is reported");
ABSL_FLAG(double, warmup_seconds, 0.03, "untimed run before each figure's timed runs");
ABSL_FLAG(int, objects, 10000, "objects per batch, and objects live in the interleaved pattern");
ABSL_FLAG(int, region_mb, 256, "FaRM region size in MiB");
ABSL_FLAG(int, capacity_gb, 8,
          "FaRM capacity in GiB (regions are sparse memfd mappings: touched pages count)");
ABSL_FLAG(int, empirical_objects, 100000, "objects per empirical fragmentation check");
ABSL_FLAG(uint64_t, seed, 1, "seed of the random sizes and orders");
ABSL_FLAG(bool, farm_outer_epoch, false,
          "FaRM threads stay inside an epoch operation between polls, as a transaction's "
          "allocations and frees would: FreeLocal's own EpochGuard then only nests");

namespace farm::alloc_bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMiB = uint64_t{1} << 20;

[[noreturn]] void Die(absl::string_view what, const absl::Status& status) {
  std::fprintf(stderr, "alloc_bench: %s: %s\n", std::string(what).c_str(), status.ToString().c_str());
  std::exit(1);
}

bool Contains(const std::vector<std::string>& list, absl::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string Percent(double fraction) { return absl::StrFormat("%.2f %%", 100 * fraction); }
std::string Bytes(double b) { return absl::StrFormat("%.1f B", b); }
std::string Size(uint64_t b) { return absl::StrCat(b, " B"); }

// --- Output ---

// A table printed with padded columns (Markdown-compatible). The first `text_columns`
// columns are left-aligned, the others right-aligned.
class Table {
 public:
  Table(std::vector<std::string> header, size_t text_columns)
      : header_(std::move(header)), text_columns_(text_columns) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void Print() const {
    std::vector<size_t> widths(header_.size(), 3);
    for (size_t c = 0; c < header_.size(); ++c) {
      widths[c] = std::max(widths[c], header_[c].size());
      for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
    }
    PrintRow(header_, widths);
    std::string rule = "|";
    for (size_t c = 0; c < widths.size(); ++c) {
      rule += c < text_columns_ ? absl::StrCat(":", std::string(widths[c] + 1, '-'), "|")
                                : absl::StrCat(std::string(widths[c] + 1, '-'), ":|");
    }
    std::printf("%s\n", rule.c_str());
    for (const auto& row : rows_) PrintRow(row, widths);
    std::printf("\n");
  }

 private:
  void PrintRow(const std::vector<std::string>& row, const std::vector<size_t>& widths) const {
    std::string line = "|";
    for (size_t c = 0; c < row.size(); ++c) {
      const int w = static_cast<int>(widths[c]);
      line += c < text_columns_ ? absl::StrFormat(" %-*s |", w, row[c])
                                : absl::StrFormat(" %*s |", w, row[c]);
    }
    std::printf("%s\n", line.c_str());
  }

  std::vector<std::string> header_;
  size_t text_columns_;
  std::vector<std::vector<std::string>> rows_;
};

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  return in >> one ? absl::StrFormat("%.2f", one) : "unknown";
}

void PrintMachine() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int nproc = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
  utsname u;
  ::uname(&u);
  std::printf("alloc_bench: %d cores (nproc), %s, Linux %s, glibc %s, load average %s at the "
              "start. Every figure below was measured or computed in this run.\n\n",
              nproc, CpuModel().c_str(), u.release, ::gnu_get_libc_version(), LoadAverage().c_str());
}

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

struct Mimalloc {
  MiMallocFn malloc = nullptr;
  MiFreeFn free = nullptr;
  MiUsableSizeFn usable_size = nullptr;
  int version = 0;
  std::string library;
  std::string missing;  // why it cannot be used; empty when loaded
  bool loaded() const { return missing.empty(); }
};

// dlopen with RTLD_LOCAL: the library's own malloc/free exports stay out of the global
// scope, so malloc remains glibc's everywhere else in the process.
Mimalloc LoadMimalloc() {
  Mimalloc mi;
#ifndef FARM_MIMALLOC_LIBRARY
  mi.missing = "libmimalloc was not found when the build was configured (install "
               "libmimalloc-dev, as deploy/install-deps.sh does, and re-run cmake)";
#else
  mi.library = FARM_MIMALLOC_LIBRARY;
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

// Where the process's malloc comes from (glibc unless something interposed it).
std::string MallocLibrary() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&::malloc), &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "unknown";
}

// --- The allocators, behind one shape: Handle, Alloc, Free, Poll, BlocksTaken ---

class GlibcHeap {
 public:
  using Handle = void*;
  void* Alloc(uint32_t bytes) { return std::malloc(bytes); }
  void Free(void* p) { std::free(p); }
  void Poll() {}
  uint64_t BlocksTaken() const { return 0; }
};

class MimallocHeap {
 public:
  using Handle = void*;
  explicit MimallocHeap(const Mimalloc& mi) : malloc_(mi.malloc), free_(mi.free) {}
  void* Alloc(uint32_t bytes) { return malloc_(bytes); }
  void Free(void* p) { free_(p); }
  void Poll() {}
  uint64_t BlocksTaken() const { return 0; }

 private:
  const MiMallocFn malloc_;
  const MiFreeFn free_;
};

// One machine's allocator, alone (node 1, r = 1, no fabric): what the threads share.
class FarmMachine {
 public:
  FarmMachine(uint64_t region_bytes, uint64_t capacity_bytes) {
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

  alloc::Allocator& allocator() { return *allocator_; }
  alloc::EpochManager& epochs() { return *epochs_; }
  DoorbellTable& doorbells() { return *doorbells_; }
  // The slot size of the block `p` is in (p must be live).
  uint32_t SlotBytesOf(FatPtr p) {
    alloc::LocalRegion* r = allocator_->blocks().FindRegion(p.addr.region());
    alloc::SlabBlock* b = r == nullptr ? nullptr : r->BlockAt(p.addr.offset());
    return b == nullptr ? 0 : b->slot_bytes();
  }

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

  explicit FarmHeap(FarmMachine& machine, bool outer_epoch = false) : outer_epoch_(outer_epoch) {
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
  ~FarmHeap() {
    if (outer_epoch_) allocator_->epoch().Exit();
    Drain();
  }

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
  void Drain() {
    for (int i = 0; i < 1'000'000 && (allocator_->round_running() || allocator_->retired_blocks() > 0);
         ++i) {
      allocator_->Reclaim();
      loop_->RunOnce();
    }
  }

 private:
  const bool outer_epoch_;
  // Destroyed in reverse: the ThreadAllocator before its channel, the channel before the loop.
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<alloc::LocalChannel> channel_;
  std::unique_ptr<alloc::ThreadAllocator> allocator_;
};

// --- Part 1: rates ---

enum class Pattern { kBatch, kInterleaved };

struct Workload {
  std::string name;
  uint32_t min_payload = 0;
  uint32_t max_payload = 0;
};

struct Cell {
  Workload workload;
  Pattern pattern = Pattern::kBatch;
  int threads = 1;
};

struct Timing {
  double seconds = 0;
  double warmup_seconds = 0;
  int repeat = 1;
  uint32_t objects = 0;
  uint64_t seed = 0;
};

// One thread's inputs, drawn before timing so that the random generator is not measured.
struct Inputs {
  std::vector<uint32_t> sizes;      // object i's payload (batch; the initial live set)
  std::vector<uint32_t> victims;    // interleaved: which live object step k replaces...
  std::vector<uint32_t> new_sizes;  // ...and its successor's payload (power-of-two length)
};

Inputs DrawInputs(const Workload& w, uint32_t objects, uint64_t seed) {
  constexpr size_t kStream = size_t{1} << 16;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> size(w.min_payload, w.max_payload);
  std::uniform_int_distribution<uint32_t> victim(0, objects - 1);
  Inputs in;
  for (uint32_t i = 0; i < objects; ++i) in.sizes.push_back(size(rng));
  for (size_t k = 0; k < kStream; ++k) {
    in.victims.push_back(victim(rng));
    in.new_sizes.push_back(size(rng));
  }
  return in;
}

// Runs one pattern over one heap; counts alloc+free pairs.
template <typename Heap>
class Driver {
 public:
  using Handle = typename Heap::Handle;
  Driver(Heap& heap, const Inputs& in, Pattern pattern)
      : heap_(heap), in_(in), pattern_(pattern), live_(in.sizes.size()) {}

  void Start() {
    if (pattern_ != Pattern::kInterleaved) return;
    for (size_t i = 0; i < live_.size(); ++i) live_[i] = heap_.Alloc(in_.sizes[i]);
  }
  // Rounds of live_.size() pairs until `deadline`; the heap is polled between rounds.
  uint64_t RunUntil(Clock::time_point deadline) {
    uint64_t pairs = 0;
    do {
      pairs += pattern_ == Pattern::kBatch ? Batch() : Steps();
      heap_.Poll();
    } while (Clock::now() < deadline);
    return pairs;
  }
  void Stop() {
    if (pattern_ != Pattern::kInterleaved) return;
    for (Handle& h : live_) heap_.Free(h);
  }

 private:
  uint64_t Batch() {
    const size_t n = live_.size();
    for (size_t i = 0; i < n; ++i) live_[i] = heap_.Alloc(in_.sizes[i]);
    for (size_t i = 0; i < n; ++i) heap_.Free(live_[i]);
    return n;
  }
  uint64_t Steps() {
    const size_t n = live_.size();
    const size_t mask = in_.victims.size() - 1;
    for (size_t j = 0; j < n; ++j, ++cursor_) {
      const size_t k = cursor_ & mask;
      Handle& h = live_[in_.victims[k]];
      heap_.Free(h);
      h = heap_.Alloc(in_.new_sizes[k]);
    }
    return n;
  }

  Heap& heap_;
  const Inputs& in_;
  const Pattern pattern_;
  std::vector<Handle> live_;
  size_t cursor_ = 0;
};

struct RateFigure {
  double pairs_per_second = 0;  // per thread
  double blocks_per_10k = 0;    // FaRM: blocks acquired or adopted per 10k pairs
};

// Measures one cell: `cell.threads` threads, each with a heap from `make_heap` (called on
// the thread), warm up, then run `repeat` timed runs together. The median run's mean
// per-thread rate stands for the figure.
template <typename MakeHeap>
RateFigure MeasureRate(const Cell& cell, const Timing& timing, MakeHeap make_heap) {
  const int n = cell.threads;
  const auto duration = std::chrono::duration<double>(timing.seconds);
  const auto warmup = std::chrono::duration<double>(timing.warmup_seconds);
  std::barrier sync(n);
  std::vector<std::vector<double>> rates(timing.repeat, std::vector<double>(n));
  std::vector<uint64_t> blocks(n), pairs(n);
  std::vector<std::thread> workers;
  for (int t = 0; t < n; ++t) {
    workers.emplace_back([&, t] {
      auto heap = make_heap();
      const Inputs in = DrawInputs(cell.workload, timing.objects, timing.seed * 1000 + t);
      Driver driver(*heap, in, cell.pattern);
      driver.Start();
      driver.RunUntil(Clock::now() + std::chrono::duration_cast<Clock::duration>(warmup));
      const uint64_t blocks_before = heap->BlocksTaken();
      for (int r = 0; r < timing.repeat; ++r) {
        sync.arrive_and_wait();
        const Clock::time_point start = Clock::now();
        const uint64_t done = driver.RunUntil(start + std::chrono::duration_cast<Clock::duration>(duration));
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        rates[r][t] = static_cast<double>(done) / elapsed;
        pairs[t] += done;
      }
      blocks[t] = heap->BlocksTaken() - blocks_before;
      driver.Stop();
    });
  }
  for (std::thread& w : workers) w.join();

  std::vector<double> per_run;
  for (const std::vector<double>& run : rates) {
    double sum = 0;
    for (double r : run) sum += r;
    per_run.push_back(sum / n);
  }
  std::sort(per_run.begin(), per_run.end());
  RateFigure f;
  f.pairs_per_second = per_run[per_run.size() / 2];
  uint64_t all_blocks = 0, all_pairs = 0;
  for (int t = 0; t < n; ++t) {
    all_blocks += blocks[t];
    all_pairs += pairs[t];
  }
  f.blocks_per_10k = all_pairs == 0 ? 0 : 1e4 * static_cast<double>(all_blocks) / static_cast<double>(all_pairs);
  return f;
}

std::vector<Workload> WorkloadsFromFlags() {
  std::vector<Workload> out;
  for (const std::string& w : absl::GetFlag(FLAGS_workloads)) {
    uint32_t bytes = 0;
    if (w == "mixed") {
      out.push_back({"mixed 16-1024", 16, 1024});
    } else if (absl::SimpleAtoi(w, &bytes) && bytes > 0 && bytes <= alloc::MaxPayloadBytes()) {
      out.push_back({absl::StrCat(bytes, " B"), bytes, bytes});
    } else {
      std::fprintf(stderr, "alloc_bench: bad workload '%s'\n", w.c_str());
      std::exit(2);
    }
  }
  return out;
}

std::vector<int> ThreadCountsFromFlags() {
  std::vector<int> out;
  for (const std::string& s : absl::GetFlag(FLAGS_threads)) {
    int t = 0;
    if (!absl::SimpleAtoi(s, &t) || t < 1 || t > 64) {
      std::fprintf(stderr, "alloc_bench: bad thread count '%s'\n", s.c_str());
      std::exit(2);
    }
    out.push_back(t);
  }
  return out;
}

std::string Mpairs(double pairs_per_second) { return absl::StrFormat("%.2f", pairs_per_second / 1e6); }
// One call (an alloc or a free): half a pair.
std::string NsPerOp(double pairs_per_second) { return absl::StrFormat("%.1f", 1e9 / (2 * pairs_per_second)); }

void RunRates(FarmMachine& machine, const Mimalloc& mi) {
  const Timing timing{absl::GetFlag(FLAGS_seconds), absl::GetFlag(FLAGS_warmup_seconds),
                      std::max(1, absl::GetFlag(FLAGS_repeat)),
                      static_cast<uint32_t>(std::max(1, absl::GetFlag(FLAGS_objects))),
                      absl::GetFlag(FLAGS_seed)};
  const std::vector<std::string> heaps = absl::GetFlag(FLAGS_heaps);
  const bool farm = Contains(heaps, "farm");
  const bool glibc = Contains(heaps, "glibc");
  const bool mimalloc = Contains(heaps, "mimalloc") && mi.loaded();
  const bool outer_epoch = absl::GetFlag(FLAGS_farm_outer_epoch);

  std::printf("1. Allocation rate per thread: alloc+free pairs (Mpairs/s, per thread; with 2 threads "
              "both run at once, each on its own objects) and ns per call (one alloc or one free = "
              "half a pair). batch = allocate %u objects, free them all in allocation order, "
              "repeat; interleaved = %u objects live, each step frees a random one and allocates "
              "its replacement. Median of %d runs of %.2f s after a %.2f s warm-up. FaRM/x = FaRM's "
              "rate over x's (below 1: FaRM slower).\n",
              timing.objects, timing.objects, timing.repeat, timing.seconds, timing.warmup_seconds);
  std::printf("   FaRM: %d MiB regions, ThreadAllocator::Allocate(payload, {}, continuation) + "
              "FreeLocal, EventLoop::RunOnce after every %u pairs%s. glibc: malloc/free from %s. ",
              absl::GetFlag(FLAGS_region_mb), timing.objects,
              outer_epoch ? ", inside an epoch operation between polls (--farm_outer_epoch)" : "",
              MallocLibrary().c_str());
  if (mi.loaded()) {
    std::printf("mimalloc %d.%d.%d: mi_malloc/mi_free from %s (dlopen RTLD_LOCAL, malloc not "
                "overridden).\n\n",
                mi.version / 100, (mi.version / 10) % 10, mi.version % 10, mi.library.c_str());
  } else {
    std::printf("\n   mimalloc column SKIPPED: %s.\n\n", mi.missing.c_str());
  }

  std::vector<std::string> header = {"workload", "pattern", "threads"};
  if (farm) header.insert(header.end(), {"FaRM Mpairs/s", "FaRM ns/call"});
  if (glibc) header.insert(header.end(), {"glibc Mpairs/s", "glibc ns/call"});
  if (mimalloc) header.insert(header.end(), {"mimalloc Mpairs/s", "mimalloc ns/call"});
  if (farm && glibc) header.push_back("FaRM/glibc");
  if (farm && mimalloc) header.push_back("FaRM/mimalloc");
  if (farm) header.push_back("FaRM blocks taken /10k pairs");
  Table table(header, 2);

  for (const Workload& w : WorkloadsFromFlags()) {
    for (const std::string& p : absl::GetFlag(FLAGS_patterns)) {
      const Pattern pattern = p == "batch" ? Pattern::kBatch : Pattern::kInterleaved;
      for (int threads : ThreadCountsFromFlags()) {
        const Cell cell{w, pattern, threads};
        std::vector<std::string> row = {w.name, p, absl::StrCat(threads)};
        RateFigure f, g, m;
        if (farm) f = MeasureRate(cell, timing, [&] { return std::make_unique<FarmHeap>(machine, outer_epoch); });
        if (glibc) g = MeasureRate(cell, timing, [] { return std::make_unique<GlibcHeap>(); });
        if (mimalloc) m = MeasureRate(cell, timing, [&] { return std::make_unique<MimallocHeap>(mi); });
        for (const RateFigure* r : {farm ? &f : nullptr, glibc ? &g : nullptr, mimalloc ? &m : nullptr}) {
          if (r != nullptr) row.insert(row.end(), {Mpairs(r->pairs_per_second), NsPerOp(r->pairs_per_second)});
        }
        if (farm && glibc) row.push_back(absl::StrFormat("%.2f", f.pairs_per_second / g.pairs_per_second));
        if (farm && mimalloc) row.push_back(absl::StrFormat("%.2f", f.pairs_per_second / m.pairs_per_second));
        if (farm) row.push_back(absl::StrFormat("%.1f", f.blocks_per_10k));
        std::fprintf(stderr, "measured %s %s x%d\n", w.name.c_str(), p.c_str(), threads);
        table.AddRow(std::move(row));
      }
    }
  }
  table.Print();
  if (farm) {
    std::printf("   FaRM blocks taken = blocks acquired from the BlockAllocator or adopted, per 10k "
                "pairs in the timed runs: a block emptied by frees is retired and, after the next "
                "end-of-epoch round, released; reusing its memory means a new block (its slot "
                "headers cleared).\n\n");
  }
}

// --- Part 2: internal fragmentation ---

// (slot - s) / slot over every stored size s in [low, high] (1-byte granularity),
// computed here from SlotSizes() in closed form per class, not with FragmentationOver.
struct FragSum {
  double sum = 0;
  uint64_t sizes = 0;
  double maximum = 0;
  uint64_t worst_size = 0;
  uint32_t classes = 0;  // slot sizes inside [low, high]
  uint32_t min_step = 0, max_step = 0;  // between consecutive slots inside [low, high]
  double average() const { return sizes == 0 ? 0 : sum / static_cast<double>(sizes); }
};

FragSum SumFragmentation(uint64_t low, uint64_t high) {
  const auto& slots = alloc::SlotSizes();
  FragSum f;
  for (size_t c = 0; c < slots.size(); ++c) {
    const uint64_t slot = slots[c];
    const uint64_t previous = c == 0 ? 0 : slots[c - 1];
    const uint64_t first = std::max(previous + 1, low);
    const uint64_t last = std::min(slot, high);
    if (slot >= low && slot <= high) {
      ++f.classes;
      if (c > 0 && previous >= low) {
        const uint32_t step = static_cast<uint32_t>(slot - previous);
        f.min_step = f.min_step == 0 ? step : std::min(f.min_step, step);
        f.max_step = std::max(f.max_step, step);
      }
    }
    if (first > last) continue;
    const double n = static_cast<double>(last - first + 1);
    const double size_sum = static_cast<double>(first + last) * n / 2;
    f.sum += n - size_sum / static_cast<double>(slot);
    f.sizes += last - first + 1;
    const double worst = static_cast<double>(slot - first) / static_cast<double>(slot);
    if (worst > f.maximum) {
      f.maximum = worst;
      f.worst_size = first;
    }
  }
  return f;
}

// Each power-of-two octave [2^k, 2^(k+1)) for 2^k in [low, high) equally likely, sizes
// uniform inside an octave.
double LogUniformAverage(uint64_t low, uint64_t high) {
  double sum = 0;
  int octaves = 0;
  for (uint64_t o = low; o < high; o *= 2, ++octaves) sum += SumFragmentation(o, 2 * o - 1).average();
  return sum / octaves;
}

// The largest payload whose stored size is at most `stored` (0 if none).
uint64_t PayloadForStored(uint64_t stored) {
  uint64_t p = stored > kObjectHeaderBytes ? stored - kObjectHeaderBytes : 0;
  while (p > 0 && MaxStoredBytes(p) > stored) --p;
  return p;
}

struct EmpiricalResult {
  double mean = 0;            // mean over objects of (slot - stored) / slot
  double bytes_weighted = 0;  // sum(slot - stored) / sum(slot)
  uint64_t mismatches = 0;    // slot read back != the class table's slot for the payload
};

// Allocates `count` objects with stored sizes from `draw` on a FaRM thread allocator,
// reads each one's slot size back from its block, and frees them.
template <typename Draw>
EmpiricalResult MeasureFragmentation(FarmMachine& machine, int count, Draw draw) {
  FarmHeap heap(machine);
  std::vector<FatPtr> objects;
  objects.reserve(count);
  EmpiricalResult r;
  double slot_sum = 0, waste_sum = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t payload = PayloadForStored(draw());
    const FatPtr p = heap.Alloc(static_cast<uint32_t>(payload));
    objects.push_back(p);
    const double slot = machine.SlotBytesOf(p);
    const double stored = static_cast<double>(MaxStoredBytes(payload));
    if (slot != alloc::ClassInfo(*alloc::ClassForPayload(payload)).slot_bytes) ++r.mismatches;
    r.mean += (slot - stored) / slot;
    slot_sum += slot;
    waste_sum += slot - stored;
  }
  for (const FatPtr& p : objects) heap.Free(p);
  r.mean /= count;
  r.bytes_weighted = waste_sum / slot_sum;
  return r;
}

std::string SizeName(uint64_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return absl::StrCat(bytes / kMiB, " MiB");
  if (bytes >= 1024 && bytes % 1024 == 0) return absl::StrCat(bytes / 1024, " KiB");
  return absl::StrCat(bytes, " B");
}

void PrintClassFragmentation() {
  const alloc::Fragmentation all = alloc::FragmentationOver(64, kMiB);
  const alloc::Fragmentation large = alloc::FragmentationOver(448, kMiB);
  const FragSum mine = SumFragmentation(64, kMiB);
  Table t({"stored sizes", "weighting", "average", "maximum", "at size", "paper"}, 2);
  t.AddRow({"64 B .. 1 MiB", "uniform (FragmentationOver)", Percent(all.average), Percent(all.maximum),
            Size(all.worst_size), "1.8 % avg, 3.6 % max"});
  t.AddRow({"448 B .. 1 MiB", "uniform (FragmentationOver)", Percent(large.average),
            Percent(large.maximum), Size(large.worst_size), "3.6 % max"});
  t.AddRow({"64 B .. 1 MiB", "uniform (recomputed from SlotSizes)", Percent(mine.average()),
            Percent(mine.maximum), Size(mine.worst_size), "-"});
  t.AddRow({"64 B .. 1 MiB", "log-uniform (each octave equally likely)",
            Percent(LogUniformAverage(64, kMiB)), Percent(mine.maximum), "-", "-"});
  t.Print();
}

void PrintOctaves() {
  Table t({"stored sizes (octave)", "slots in it", "slot step", "average", "maximum", "at size"}, 1);
  for (uint64_t o = 64; o < kMiB; o *= 2) {
    const FragSum f = SumFragmentation(o, 2 * o - 1);
    const std::string step = f.min_step == f.max_step ? Size(f.min_step)
                                                      : absl::StrFormat("%u-%u B", f.min_step, f.max_step);
    t.AddRow({absl::StrCat("[", SizeName(o), ", ", SizeName(2 * o), ")"), absl::StrCat(f.classes),
              step, Percent(f.average()), Percent(f.maximum), Size(f.worst_size)});
  }
  t.Print();
}

void PrintEmpirical(FarmMachine& machine) {
  const int count = std::max(1, absl::GetFlag(FLAGS_empirical_objects));
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  Table t({"stored sizes drawn", "objects", "measured mean (slot-stored)/slot", "computed", "bytes-weighted",
           "slot != table"},
          1);
  {
    std::uniform_int_distribution<uint64_t> size(64, 4096);
    const EmpiricalResult r = MeasureFragmentation(machine, count, [&] { return size(rng); });
    t.AddRow({"uniform 64 B .. 4 KiB", absl::StrCat(count), Percent(r.mean),
              Percent(alloc::FragmentationOver(64, 4096).average), Percent(r.bytes_weighted),
              absl::StrCat(r.mismatches)});
  }
  {
    std::uniform_int_distribution<int> octave(6, 15);  // 64 B .. 64 KiB
    const EmpiricalResult r = MeasureFragmentation(machine, count, [&] {
      const uint64_t low = uint64_t{1} << octave(rng);
      return std::uniform_int_distribution<uint64_t>(low, 2 * low - 1)(rng);
    });
    t.AddRow({"log-uniform 64 B .. 64 KiB", absl::StrCat(count), Percent(r.mean),
              Percent(LogUniformAverage(64, 64 * 1024)), Percent(r.bytes_weighted),
              absl::StrCat(r.mismatches)});
  }
  t.Print();
}

void RunFragmentation(FarmMachine& machine) {
  std::printf("2. Internal fragmentation of the %u size classes: (slot - s) / slot for an object of "
              "s stored bytes (16 B header + payload + 2 B per line crossed) in the smallest slot "
              "that holds it. Slots are multiples of %lu B.\n\n",
              alloc::kSizeClassCount, static_cast<unsigned long>(kObjectAlignment));
  PrintClassFragmentation();
  std::printf("   Per octave of stored sizes (the log-uniform average is the mean of these "
              "averages): below ~450 B the 16-byte step, not the 3.5 %% growth ratio, sets the "
              "slot sizes.\n\n");
  PrintOctaves();
  std::printf("   Empirical: objects allocated through ThreadAllocator::Allocate, payload = the "
              "largest with MaxStoredBytes(payload) <= the drawn size, slot read back from the "
              "object's SlabBlock; \"computed\" is the table's figure for the same distribution of "
              "drawn sizes; bytes-weighted = sum(slot - stored) / sum(slot).\n\n");
  PrintEmpirical(machine);
}

// --- Part 3: memory per object ---

struct FarmCost {
  double stored = 0, slot = 0;
  double header_versions = 0;  // stored - payload
  double internal = 0;         // slot - stored
  double tail = 0;             // block tail / slots
  double region = 0;           // slot + tail
  double node_private = 0;     // SlabBlock bitmaps, descriptor, unit pointers / slots
};

FarmCost FarmCostOf(uint64_t payload) {
  const alloc::SizeClassInfo& info = alloc::ClassInfo(*alloc::ClassForPayload(payload));
  const double slots = info.slots;
  const uint64_t block = info.block_units * alloc::kBlockUnitBytes;
  const uint64_t bitmap_words = (info.slots + 63) / 64;
  FarmCost c;
  c.stored = static_cast<double>(MaxStoredBytes(payload));
  c.slot = info.slot_bytes;
  c.header_versions = c.stored - static_cast<double>(payload);
  c.internal = c.slot - c.stored;
  c.tail = static_cast<double>(block - uint64_t{info.slots} * info.slot_bytes) / slots;
  c.region = c.slot + c.tail;
  c.node_private = static_cast<double>(2 * bitmap_words * sizeof(uint64_t) + sizeof(alloc::SlabBlock) +
                                       info.block_units * sizeof(void*)) /
                   slots;
  return c;
}

// Bytes one object of `payload` costs in glibc's heap: usable size plus the 8-byte chunk
// header (the size word; the previous chunk's size word overlaps this chunk's payload).
double GlibcBytes(uint64_t payload) {
  void* p = std::malloc(payload);
  const double bytes = static_cast<double>(::malloc_usable_size(p)) + 8;
  std::free(p);
  return bytes;
}

double MimallocBytes(const Mimalloc& mi, uint64_t payload) {
  void* p = mi.malloc(payload);
  const double bytes = static_cast<double>(mi.usable_size(p));
  mi.free(p);
  return bytes;
}

// The mean of f(payload) over payloads [low, high], each equally likely.
template <typename F>
double MeanBytes(uint64_t low, uint64_t high, F f) {
  double sum = 0;
  for (uint64_t p = low; p <= high; ++p) sum += f(p);
  return sum / static_cast<double>(high - low + 1);
}

// FarmCostOf, field by field, averaged over payloads [low, high].
FarmCost MeanFarmCost(uint64_t low, uint64_t high) {
  FarmCost m;
  m.stored = MeanBytes(low, high, [](uint64_t p) { return FarmCostOf(p).stored; });
  m.slot = MeanBytes(low, high, [](uint64_t p) { return FarmCostOf(p).slot; });
  m.header_versions = MeanBytes(low, high, [](uint64_t p) { return FarmCostOf(p).header_versions; });
  m.internal = MeanBytes(low, high, [](uint64_t p) { return FarmCostOf(p).internal; });
  m.tail = MeanBytes(low, high, [](uint64_t p) { return FarmCostOf(p).tail; });
  m.region = MeanBytes(low, high, [](uint64_t p) { return FarmCostOf(p).region; });
  m.node_private = MeanBytes(low, high, [](uint64_t p) { return FarmCostOf(p).node_private; });
  return m;
}

struct PayloadRow {
  std::string name;
  uint64_t low, high;  // a single payload, or a uniform range (figures are means)
};

std::string Overhead(double bytes, double payload) {
  return absl::StrFormat("+%.0f %%", 100 * (bytes - payload) / payload);
}

void RunOverhead(const Mimalloc& mi) {
  const std::vector<PayloadRow> rows = {{"16 B", 16, 16}, {"64 B", 64, 64}, {"256 B", 256, 256},
                                        {"1024 B", 1024, 1024}, {"mixed 16-1024 (mean)", 16, 1024}};
  std::printf("3. Memory per object. FaRM, region bytes per object = slot + block tail / slots "
              "per block; of which header + line versions = MaxStoredBytes(p) - p, internal "
              "fragmentation = slot - MaxStoredBytes(p). Node-private = the SlabBlock of the "
              "object's block amortised over its slots: two bitmaps (local_free, remote_free: 2 "
              "bits per slot, in whole 64-bit words) + sizeof(SlabBlock) = %zu B + the per-MiB-unit "
              "block pointer (8 B per unit). Not counted: heap headers of those allocations, the "
              "region's owned_ map entry (~16 B per block), per-thread class state.\n\n",
              sizeof(alloc::SlabBlock));
  Table farm({"payload", "stored", "slot", "header+versions", "internal frag", "block tail/obj",
              "region B/obj", "overhead", "node-private B/obj"},
             1);
  for (const PayloadRow& r : rows) {
    const FarmCost c = MeanFarmCost(r.low, r.high);
    const double payload = static_cast<double>(r.low + r.high) / 2;
    farm.AddRow({r.name, Bytes(c.stored), Bytes(c.slot), Bytes(c.header_versions), Bytes(c.internal),
                 Bytes(c.tail), Bytes(c.region), Overhead(c.region, payload),
                 absl::StrFormat("%.3f B", c.node_private)});
  }
  farm.Print();

  std::printf("   Against glibc (malloc_usable_size(p) + 8 B chunk header) and mimalloc "
              "(mi_usable_size(p); its page metadata is not per object) for the same payloads. "
              "FaRM's 16 B header carries the object's version and incarnation: a malloc-based "
              "store that needed them would add 16 B to its payload.\n\n");
  std::vector<std::string> header = {"payload", "FaRM B/obj", "glibc B/obj"};
  if (mi.loaded()) header.push_back("mimalloc B/obj");
  header.insert(header.end(), {"FaRM overhead", "glibc overhead"});
  if (mi.loaded()) header.push_back("mimalloc overhead");
  Table cmp(header, 1);
  for (const PayloadRow& r : rows) {
    const double payload = static_cast<double>(r.low + r.high) / 2;
    const double farm_bytes = MeanFarmCost(r.low, r.high).region;
    const double glibc_bytes = MeanBytes(r.low, r.high, GlibcBytes);
    const double mi_bytes =
        mi.loaded() ? MeanBytes(r.low, r.high, [&](uint64_t p) { return MimallocBytes(mi, p); }) : 0;
    std::vector<std::string> row = {r.name, Bytes(farm_bytes), Bytes(glibc_bytes)};
    if (mi.loaded()) row.push_back(Bytes(mi_bytes));
    row.insert(row.end(), {Overhead(farm_bytes, payload), Overhead(glibc_bytes, payload)});
    if (mi.loaded()) row.push_back(Overhead(mi_bytes, payload));
    cmp.AddRow(std::move(row));
  }
  cmp.Print();
  if (!mi.loaded()) std::printf("   mimalloc column SKIPPED: %s.\n\n", mi.missing.c_str());
}

int Run() {
  const std::vector<std::string> parts = absl::GetFlag(FLAGS_parts);
  const Mimalloc mi = LoadMimalloc();
  FarmMachine machine(uint64_t(absl::GetFlag(FLAGS_region_mb)) * kMiB,
                      uint64_t(absl::GetFlag(FLAGS_capacity_gb)) << 30);
  PrintMachine();
  if (Contains(parts, "rate")) RunRates(machine, mi);
  if (Contains(parts, "fragmentation")) RunFragmentation(machine);
  if (Contains(parts, "overhead")) RunOverhead(mi);
  const alloc::AllocatorStats s = machine.allocator().Stats();
  std::printf("FaRM regions created in this run: %llu of %d MiB (capacity %d GiB).\n",
              static_cast<unsigned long long>(s.regions_created), absl::GetFlag(FLAGS_region_mb),
              absl::GetFlag(FLAGS_capacity_gb));
  return 0;
}

}  // namespace
}  // namespace farm::alloc_bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Measures FaRM's allocator against glibc malloc and mimalloc: rates, size-class "
      "fragmentation and memory per object.");
  absl::ParseCommandLine(argc, argv);
  return farm::alloc_bench::Run();
}
