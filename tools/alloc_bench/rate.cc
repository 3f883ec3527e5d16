#include "tools/alloc_bench/rate.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "alloc/size_classes.h"
#include "tools/alloc_bench/table.h"

namespace farm::alloc_bench {
namespace {

using Clock = std::chrono::steady_clock;

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

// A value given on the command line that part 1 cannot use.
[[noreturn]] void ExitBadValue(const char* what, const std::string& value) {
  std::fprintf(stderr, "alloc_bench: bad %s '%s'\n", what, value.c_str());
  std::exit(2);
}

std::vector<Workload> ParseWorkloads(const std::vector<std::string>& names) {
  std::vector<Workload> out;
  for (const std::string& w : names) {
    uint32_t bytes = 0;
    if (w == "mixed") {
      out.push_back({"mixed 16-1024", 16, 1024});
    } else if (absl::SimpleAtoi(w, &bytes) && bytes > 0 && bytes <= alloc::MaxPayloadBytes()) {
      out.push_back({absl::StrCat(bytes, " B"), bytes, bytes});
    } else {
      ExitBadValue("workload", w);
    }
  }
  return out;
}

std::vector<int> ParseThreadCounts(const std::vector<std::string>& counts) {
  std::vector<int> out;
  for (const std::string& s : counts) {
    int t = 0;
    if (!absl::SimpleAtoi(s, &t) || t < 1 || t > 64) ExitBadValue("thread count", s);
    out.push_back(t);
  }
  return out;
}

std::string Mpairs(double pairs_per_second) { return absl::StrFormat("%.2f", pairs_per_second / 1e6); }
// One call (an alloc or a free): half a pair.
std::string NsPerOp(double pairs_per_second) { return absl::StrFormat("%.1f", 1e9 / (2 * pairs_per_second)); }
// FaRM's rate over another heap's.
std::string Ratio(const RateFigure& farm, const RateFigure& other) {
  return absl::StrFormat("%.2f", farm.pairs_per_second / other.pairs_per_second);
}

void PrintDescription(const MimallocLibrary& mi, const RateOptions& options) {
  const Timing& timing = options.timing;
  std::printf("1. Allocation rate per thread: alloc+free pairs (Mpairs/s, per thread; with 2 threads "
              "both run at once, each on its own objects) and ns per call (one alloc or one free = "
              "half a pair). batch = allocate %u objects, free them all in allocation order, "
              "repeat; interleaved = %u objects live, each step frees a random one and allocates "
              "its replacement. Median of %d runs of %.2f s after a %.2f s warm-up. FaRM/x = FaRM's "
              "rate over x's (below 1: FaRM slower).\n",
              timing.objects, timing.objects, timing.repeat, timing.seconds, timing.warmup_seconds);
  std::printf("   FaRM: %d MiB regions, ThreadAllocator::Allocate(payload, {}, continuation) + "
              "FreeLocal, EventLoop::RunOnce after every %u pairs%s. glibc: malloc/free from %s. ",
              options.region_mb, timing.objects,
              options.farm_outer_epoch ? ", inside an epoch operation between polls (--farm_outer_epoch)"
                                       : "",
              MallocLibraryPath().c_str());
  if (mi.loaded()) {
    std::printf("mimalloc %d.%d.%d: mi_malloc/mi_free from %s (dlopen RTLD_LOCAL, malloc not "
                "overridden).\n\n",
                mi.version / 100, (mi.version / 10) % 10, mi.version % 10, mi.path.c_str());
  } else {
    std::printf("\n   mimalloc column SKIPPED: %s.\n\n", mi.missing.c_str());
  }
}

}  // namespace

void RunRates(FarmMachine& machine, const MimallocLibrary& mi, const RateOptions& options) {
  const Timing& timing = options.timing;
  const bool farm = options.farm;
  const bool glibc = options.glibc;
  const bool mimalloc = options.mimalloc && mi.loaded();
  const bool outer_epoch = options.farm_outer_epoch;
  PrintDescription(mi, options);

  std::vector<std::string> header = {"workload", "pattern", "threads"};
  if (farm) header.insert(header.end(), {"FaRM Mpairs/s", "FaRM ns/call"});
  if (glibc) header.insert(header.end(), {"glibc Mpairs/s", "glibc ns/call"});
  if (mimalloc) header.insert(header.end(), {"mimalloc Mpairs/s", "mimalloc ns/call"});
  if (farm && glibc) header.push_back("FaRM/glibc");
  if (farm && mimalloc) header.push_back("FaRM/mimalloc");
  if (farm) header.push_back("FaRM blocks taken /10k pairs");
  Table table(header, 2);

  for (const Workload& w : ParseWorkloads(options.workloads)) {
    for (const std::string& p : options.patterns) {
      const Pattern pattern = p == "batch" ? Pattern::kBatch : Pattern::kInterleaved;
      for (int threads : ParseThreadCounts(options.thread_counts)) {
        const Cell cell{w, pattern, threads};
        std::vector<std::string> row = {w.name, p, absl::StrCat(threads)};
        RateFigure f, g, m;
        if (farm) f = MeasureRate(cell, timing, [&] { return std::make_unique<FarmHeap>(machine, outer_epoch); });
        if (glibc) g = MeasureRate(cell, timing, [] { return std::make_unique<GlibcHeap>(); });
        if (mimalloc) m = MeasureRate(cell, timing, [&] { return std::make_unique<MimallocHeap>(mi); });
        for (const RateFigure* r : {farm ? &f : nullptr, glibc ? &g : nullptr, mimalloc ? &m : nullptr}) {
          if (r != nullptr) row.insert(row.end(), {Mpairs(r->pairs_per_second), NsPerOp(r->pairs_per_second)});
        }
        if (farm && glibc) row.push_back(Ratio(f, g));
        if (farm && mimalloc) row.push_back(Ratio(f, m));
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

}  // namespace farm::alloc_bench
