// The `memory` backend: one graph::MemoryGraph (the reference model of LinkBench's
// contract) behind one absl::Mutex, shared by every connection. For tests and to
// measure the driver's own ceiling.
#ifndef FARM_TOOLS_LINKBENCH_MEMORY_BACKEND_H_
#define FARM_TOOLS_LINKBENCH_MEMORY_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "tools/linkbench/backend.h"
#include "tools/linkbench/backend_registry.h"

namespace farm::linkbench {

absl::StatusOr<std::unique_ptr<Backend>> OpenMemoryBackend(const BackendOptions& options);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_MEMORY_BACKEND_H_
