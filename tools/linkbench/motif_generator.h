// MotifDataGenerator: LinkBench's payload bytes. Bytes lie in [start_byte, end_byte]; a
// buffer of `motif_bytes` random "motifs" is drawn from the RNG on first use, then the
// output is filled in chunks of min(128, motif_bytes): with probability `uniqueness` a
// chunk is fresh random bytes, otherwise a copy of a random slice of the motif buffer
// (so concatenated payloads compress like real data).
//
// Stateful (the motif buffer): one per thread and purpose, as in LinkBench.
#ifndef FARM_TOOLS_LINKBENCH_MOTIF_GENERATOR_H_
#define FARM_TOOLS_LINKBENCH_MOTIF_GENERATOR_H_

#include <string>

#include "tools/linkbench/java_random.h"
#include "tools/linkbench/workload.h"

namespace farm::linkbench {

class MotifGenerator {
 public:
  explicit MotifGenerator(const DataGenConfig& config) : config_(config) {}

  // `size` bytes of payload.
  std::string Fill(JavaRandom& rng, size_t size);

 private:
  const DataGenConfig config_;
  std::string motifs_;  // empty until the first Fill
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_MOTIF_GENERATOR_H_
