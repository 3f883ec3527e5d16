// alloc_bench: FaRM's allocator (alloc/) against glibc malloc and mimalloc on this
// machine, in one run. After a line describing the machine (host.h) it prints three
// parts, each chosen with --parts:
//   1. rate           alloc+free pairs per second per thread (rate.h);
//   2. fragmentation  internal fragmentation of the size classes (fragmentation.h);
//   3. overhead       memory per object (overhead.h);
// and the number of FaRM regions the run created. The allocators are in heaps.h. This
// file owns the flags and turns them into what each part is given.
//
// Run (about 25 s with the defaults; figures are noisy on a shared machine, see the load
// average on the first line):
//   build/tools/alloc_bench/alloc_bench
//   alloc_bench --seconds=0.5 --repeat=5                       steadier figures
//   alloc_bench --parts=rate --heaps=farm --workloads=1024     one column, e.g. under perf
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/string_view.h"
#include "farm/base/command_line.h"
#include "tools/alloc_bench/fragmentation.h"
#include "tools/alloc_bench/heaps.h"
#include "tools/alloc_bench/host.h"
#include "tools/alloc_bench/overhead.h"
#include "tools/alloc_bench/rate.h"

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

bool Contains(const std::vector<std::string>& list, absl::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

RateOptions RateOptionsFromFlags() {
  const std::vector<std::string> heaps = absl::GetFlag(FLAGS_heaps);
  RateOptions o;
  o.farm = Contains(heaps, "farm");
  o.glibc = Contains(heaps, "glibc");
  o.mimalloc = Contains(heaps, "mimalloc");
  o.workloads = absl::GetFlag(FLAGS_workloads);
  o.patterns = absl::GetFlag(FLAGS_patterns);
  o.thread_counts = absl::GetFlag(FLAGS_threads);
  o.timing = {absl::GetFlag(FLAGS_seconds), absl::GetFlag(FLAGS_warmup_seconds),
              std::max(1, absl::GetFlag(FLAGS_repeat)),
              static_cast<uint32_t>(std::max(1, absl::GetFlag(FLAGS_objects))),
              absl::GetFlag(FLAGS_seed)};
  o.region_mb = absl::GetFlag(FLAGS_region_mb);
  o.farm_outer_epoch = absl::GetFlag(FLAGS_farm_outer_epoch);
  return o;
}

int Run() {
  const std::vector<std::string> parts = absl::GetFlag(FLAGS_parts);
  const MimallocLibrary mi = LoadMimalloc();
  FarmMachine machine(uint64_t(absl::GetFlag(FLAGS_region_mb)) << 20,
                      uint64_t(absl::GetFlag(FLAGS_capacity_gb)) << 30);
  PrintHost();
  if (Contains(parts, "rate")) RunRates(machine, mi, RateOptionsFromFlags());
  if (Contains(parts, "fragmentation")) {
    RunFragmentation(machine, std::max(1, absl::GetFlag(FLAGS_empirical_objects)),
                     absl::GetFlag(FLAGS_seed));
  }
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
  farm::ParseCommandLine(argc, argv,
                         "Measures FaRM's allocator against glibc malloc and mimalloc: rates, size-class "
                         "fragmentation and memory per object.");
  return farm::alloc_bench::Run();
}
