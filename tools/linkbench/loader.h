// The load phase, as LinkBenchLoad and NodeLoader: `loaders` threads take chunks of
// `chunk_size` id1s in order from a shared queue and bulk-load each id1's links per
// link type (count from LinkCounts, id2 = id1 + j, payload log-normal/motif, time
// spread over the last ~49 days: now - 2^31 ms + nextInt()); one more thread resets
// the node ids to startid1 and bulk-loads the nodes [startid1, maxid1) in batches of
// 1024 (version 1, time now in s, type 2048). Every chunk and the node loader draw from
// their own JavaRandom seeded from one master JavaRandom(seed), so a load is
// reproducible chunk by chunk.
//
// Also: the graph's expected size, computed without a store (for tests and reports).
#ifndef FARM_TOOLS_LINKBENCH_LOADER_H_
#define FARM_TOOLS_LINKBENCH_LOADER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/types.h"
#include "tools/linkbench/backend.h"
#include "tools/linkbench/java_random.h"
#include "tools/linkbench/model.h"
#include "tools/linkbench/motif_generator.h"

namespace farm::linkbench {

struct LoadOptions {
  int loaders = 10;
  int64_t chunk_size = 2048;
  int64_t seed = 1;
  bool progress = true;
};

struct LoadResult {
  int64_t nodes = 0;
  int64_t links = 0;
  double seconds = 0;
  double node_seconds = 0;  // the node loader's own time
  int64_t id_mismatches = 0;  // nodes whose id differed from the expected (LinkBench warns)
};

// Loads the graph through `backend`. The first error of any thread stops the phase and
// is returned (naming the operation and id1).
absl::StatusOr<LoadResult> RunLoadPhase(Backend& backend, const WorkloadModel& model, const LoadOptions& options);

// The links the load makes for id1, one vector per link type (possibly empty).
std::vector<std::vector<graph::Link>> GenerateLinks(const WorkloadModel& model, JavaRandom& rng,
                                                     MotifGenerator& gen, int64_t id1, int64_t now_ms);
graph::Node GenerateNode(const WorkloadModel& model, JavaRandom& rng, MotifGenerator& gen, int32_t now_s);

// The number of links the load makes (sum of LinkCounts::ForType over ids and types).
int64_t ExpectedLinks(const WorkloadModel& model);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_LOADER_H_
