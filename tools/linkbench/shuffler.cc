#include "tools/linkbench/shuffler.h"

#include <cstdlib>

#include "tools/linkbench/java_random.h"

namespace farm::linkbench {

InvertibleShuffler::InvertibleShuffler(int64_t seed, int groups, int64_t n) : n_(n) {
  if (groups > n) groups = static_cast<int>(n);
  groups_ = groups;
  // As the original: (int) n / groups, i.e. n truncated to 32 bits first.
  min_group_size_ = static_cast<int32_t>(n) / groups;
  JavaRandom rng(seed);
  params_.resize(groups);
  for (int i = 0; i < groups; ++i) {
    params_[i] = std::llabs(rng.NextInt(static_cast<int32_t>(min_group_size_)));
  }
  n_rounded_down_ = (n / groups) * groups;
  n_rounded_up_ = n == n_rounded_down_ ? n : n_rounded_down_ + groups;
}

int64_t InvertibleShuffler::Apply(int64_t i, bool inverse) const {
  const int group = static_cast<int>(i % groups_);
  const bool big_group = group < n_ % groups_;
  int64_t rotate = params_[group];
  if (inverse) rotate = (big_group ? min_group_size_ + 1 : min_group_size_) - rotate;
  const int64_t j = i + groups_ * rotate;
  if (j < n_) return j;
  int64_t result = big_group ? j % n_rounded_up_ : j % n_rounded_down_;
  if (result >= n_) result = group;
  return result;
}

}  // namespace farm::linkbench
