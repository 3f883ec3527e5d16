// InvertibleShuffler: LinkBench's fixed-seed permutation of [0, n), with its inverse.
// Ids are split into `groups` residue classes (i mod groups); each class is rotated by
// a per-class offset drawn from java.util.Random(seed), so permute and invert are O(1).
// The seeds (RealDistribution): nlinks and the correlated link accesses 20343988438726021,
// uncorrelated link accesses 53238253823453, node accesses 4766565305853767165; 1024
// groups each.
//
// Immutable after construction; share freely.
#ifndef FARM_TOOLS_LINKBENCH_SHUFFLER_H_
#define FARM_TOOLS_LINKBENCH_SHUFFLER_H_

#include <cstdint>
#include <vector>

namespace farm::linkbench {

inline constexpr int64_t kNlinksShufflerSeed = 20343988438726021LL;
inline constexpr int64_t kUncorrShufflerSeed = 53238253823453LL;
inline constexpr int64_t kNodeShufflerSeed = 4766565305853767165LL;
inline constexpr int kShufflerGroups = 1024;

class InvertibleShuffler {
 public:
  // n >= 1. More groups than ids: one group per id.
  InvertibleShuffler(int64_t seed, int groups, int64_t n);

  // i in [0, n).
  int64_t Permute(int64_t i) const { return Apply(i, false); }
  int64_t InvertPermute(int64_t i) const { return Apply(i, true); }
  int64_t n() const { return n_; }

 private:
  int64_t Apply(int64_t i, bool inverse) const;

  std::vector<int64_t> params_;
  int groups_;
  int64_t n_;
  int64_t n_rounded_up_;
  int64_t n_rounded_down_;
  int64_t min_group_size_;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_SHUFFLER_H_
