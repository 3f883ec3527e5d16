#include "tools/linkbench/motif_generator.h"

#include <algorithm>

namespace farm::linkbench {

std::string MotifGenerator::Fill(JavaRandom& rng, size_t size) {
  const int range = config_.end_byte - config_.start_byte + 1;
  if (motifs_.empty()) {
    motifs_.resize(config_.motif_bytes);
    for (char& c : motifs_) c = static_cast<char>(config_.start_byte + rng.NextInt(range));
  }
  std::string data(size, '\0');
  const size_t chunk = std::min<size_t>(128, motifs_.size());
  for (size_t i = 0; i < size; i += chunk) {
    if (rng.NextDouble() < config_.uniqueness) {
      const size_t end = std::min(size, i + chunk);
      for (size_t j = i; j < end; ++j) data[j] = static_cast<char>(config_.start_byte + rng.NextInt(range));
    } else {
      const size_t this_chunk = std::min(chunk, size - i);
      const int k = rng.NextInt(static_cast<int32_t>(motifs_.size() - this_chunk + 1));
      std::copy_n(motifs_.begin() + k, this_chunk, data.begin() + i);
    }
  }
  return data;
}

}  // namespace farm::linkbench
