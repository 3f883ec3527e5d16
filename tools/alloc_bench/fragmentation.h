// Part 2 of the output: internal fragmentation of the size classes, (slot - s) / slot for
// an object of s stored bytes. FragmentationOver against the paper's 1.8% / 3.6%, the
// same recomputed here from SlotSizes() (uniform and log-uniform weighting, and per
// octave), and an empirical check that allocates objects on a FarmHeap and reads their
// slot size back from their block.
#ifndef FARM_TOOLS_ALLOC_BENCH_FRAGMENTATION_H_
#define FARM_TOOLS_ALLOC_BENCH_FRAGMENTATION_H_

#include <cstdint>

#include "tools/alloc_bench/heaps.h"

namespace farm::alloc_bench {

// Prints part 2 to stdout. The empirical check allocates `empirical_objects` objects per
// distribution, with sizes drawn from `seed`.
void RunFragmentation(FarmMachine& machine, int empirical_objects, uint64_t seed);

}  // namespace farm::alloc_bench

#endif  // FARM_TOOLS_ALLOC_BENCH_FRAGMENTATION_H_
