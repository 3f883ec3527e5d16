// Part 3 of the output: memory per object. FaRM's region bytes per object split into
// header + line versions, internal fragmentation and the block tail, its node-private
// metadata (the SlabBlock amortised over the block's slots), and glibc's and mimalloc's
// cost for the same payloads. Computed from the size-class table and the heaps' usable
// sizes; nothing is timed.
#ifndef FARM_TOOLS_ALLOC_BENCH_OVERHEAD_H_
#define FARM_TOOLS_ALLOC_BENCH_OVERHEAD_H_

#include "tools/alloc_bench/heaps.h"

namespace farm::alloc_bench {

// Prints part 3 to stdout; the mimalloc columns only if `mi` is loaded.
void RunOverhead(const MimallocLibrary& mi);

}  // namespace farm::alloc_bench

#endif  // FARM_TOOLS_ALLOC_BENCH_OVERHEAD_H_
