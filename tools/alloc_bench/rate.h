// Part 1 of the output: allocation rates. Alloc+free pairs per second per thread for the
// payload workloads (fixed sizes, or "mixed": uniform 16..1024 B), thread counts and
// patterns asked for:
//   batch        allocate `objects` objects, free them all in the same order, repeat;
//   interleaved  keep `objects` objects live; each step frees a random one and allocates
//                its replacement (a steady state).
// FaRM goes through the public ThreadAllocator API (Allocate with a continuation,
// FreeLocal), one FarmHeap per thread on the shared FarmMachine, driven with RunOnce
// after every `objects` pairs so that end-of-epoch rounds complete. glibc goes through
// malloc/free, mimalloc through mi_malloc/mi_free (see heaps.h). Each figure: a warm-up,
// then `repeat` timed runs of `seconds`, all threads at once; the median run is reported.
#ifndef FARM_TOOLS_ALLOC_BENCH_RATE_H_
#define FARM_TOOLS_ALLOC_BENCH_RATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/alloc_bench/heaps.h"

namespace farm::alloc_bench {

struct Timing {
  double seconds = 0;         // each timed run
  double warmup_seconds = 0;  // the untimed run before a figure's timed runs
  int repeat = 1;             // timed runs per figure
  uint32_t objects = 0;       // per batch, and live in the interleaved pattern
  uint64_t seed = 0;          // of the random sizes and orders
};

struct RateOptions {
  // The heaps asked for; mimalloc is measured only if its library is loaded.
  bool farm = false;
  bool glibc = false;
  bool mimalloc = false;
  // As given on the command line ("64", "mixed"; "batch", "interleaved"; "1", "2"): a
  // bad workload or thread count ends the program, with status 2, when it is reached.
  std::vector<std::string> workloads;
  std::vector<std::string> patterns;
  std::vector<std::string> thread_counts;
  Timing timing;
  int region_mb = 0;              // the FarmMachine's region size, for the description
  bool farm_outer_epoch = false;  // see FarmHeap
};

// Prints part 1 to stdout (and a line per figure measured to stderr).
void RunRates(FarmMachine& machine, const MimallocLibrary& mi, const RateOptions& options);

}  // namespace farm::alloc_bench

#endif  // FARM_TOOLS_ALLOC_BENCH_RATE_H_
