// The first line of the output: what machine the figures were measured on (cores, CPU,
// kernel, glibc, load average at the start).
#ifndef FARM_TOOLS_ALLOC_BENCH_HOST_H_
#define FARM_TOOLS_ALLOC_BENCH_HOST_H_

namespace farm::alloc_bench {

// Writes that line, and a blank line, to stdout.
void PrintHost();

}  // namespace farm::alloc_bench

#endif  // FARM_TOOLS_ALLOC_BENCH_HOST_H_
