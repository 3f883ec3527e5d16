// IdSpaceBackend: a backend whose store outlives one run (a cluster's graph) seen as a
// fresh, empty store, as LinkBench expects of every backend: every id the driver uses
// (node ids, id1, id2) is moved by a base (a multiple of 2^40, different for each open:
// runs and backends of one invocation against one cluster never meet), and moved back
// in what the store returns. The driver's ids stay below 2^40.
#ifndef FARM_TOOLS_LINKBENCH_ID_SPACE_H_
#define FARM_TOOLS_LINKBENCH_ID_SPACE_H_

#include <cstdint>
#include <memory>

#include "tools/linkbench/backend.h"

namespace farm::linkbench {

inline constexpr int64_t kIdSpaceBits = 40;

// A base for a new open, at random.
int64_t FreshIdBase();

std::unique_ptr<Backend> InIdSpace(std::unique_ptr<Backend> backend, int64_t base);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_ID_SPACE_H_
