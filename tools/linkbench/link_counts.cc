#include "tools/linkbench/link_counts.h"

#include <algorithm>
#include <cmath>

namespace farm::linkbench {

LinkCounts::LinkCounts(const Cdf& nlinks, const Workload& w)
    : nlinks_(nlinks),
      startid1_(w.startid1),
      maxid1_(w.maxid1),
      link_type_count_(w.link_type_count),
      randomid2max_(w.randomid2max),
      id2gen_config_(w.id2gen_config),
      shuffler_(kNlinksShufflerSeed, kShufflerGroups, w.maxid1 - w.startid1) {}

int64_t LinkCounts::Total(int64_t id1) const {
  if (id1 < startid1_ || id1 >= maxid1_) return 0;
  const int64_t rank = shuffler_.InvertPermute(id1 - startid1_);
  return RealNlinks(nlinks_, rank, maxid1_ - startid1_);
}

int64_t LinkCounts::ForType(int64_t id1, int64_t link_type) const {
  const int64_t total = Total(id1);
  const int64_t min_count = total / link_type_count_;
  const int64_t left_over = total - min_count;  // (quirk) sic: not total % k
  const int64_t type_num = link_type - graph::kDefaultLinkType;
  return type_num < left_over ? min_count + 1 : min_count;
}

int64_t LinkCounts::ChooseForLoad(JavaRandom& rng, int64_t id1, int64_t j) const {
  if (randomid2max_ == 0) return id1 + j;
  return rng.NextInt(static_cast<int32_t>(randomid2max_));
}

int64_t LinkCounts::Range(double p_exist, int64_t nlinks) const {
  const auto range = static_cast<int64_t>(std::ceil((1 / p_exist) * static_cast<double>(nlinks)));
  return std::max<int64_t>(1, range);
}

int64_t LinkCounts::FixId2(int64_t id2, int requester, int nrequesters) const {
  int64_t fixed = id2 - (id2 % nrequesters) + requester;
  if (fixed > randomid2max_ && randomid2max_ > 0) fixed -= nrequesters;
  return fixed;
}

int64_t LinkCounts::ChooseInternal(JavaRandom& rng, int64_t id1, int64_t range, int requester,
                                   int nrequesters) const {
  const int64_t id2 = randomid2max_ == 0 ? id1 + rng.NextInt(static_cast<int32_t>(range))
                                         : rng.NextInt(static_cast<int32_t>(randomid2max_));
  return id2gen_config_ == 1 ? FixId2(id2, requester, nrequesters) : id2;
}

int64_t LinkCounts::ChooseForOp(JavaRandom& rng, int64_t id1, int64_t link_type, double p_exist,
                                int requester, int nrequesters) const {
  return ChooseInternal(rng, id1, Range(p_exist, ForType(id1, link_type)), requester, nrequesters);
}

std::vector<int64_t> LinkCounts::ChooseMultipleForOp(JavaRandom& rng, int64_t id1, int64_t link_type,
                                                     int n, double p_exist, int requester,
                                                     int nrequesters) const {
  std::vector<int64_t> id2s(n);
  const int64_t range = Range(p_exist, ForType(id1, link_type));
  if (range <= n && randomid2max_ == 0) {
    for (int i = 0; i < n; ++i) {
      id2s[i] = id2gen_config_ == 1 ? FixId2(id1 + i, requester, nrequesters) : id1 + i;
    }
    return id2s;
  }
  for (int i = 0; i < n; ++i) {
    int64_t id2;
    int iters = 0;
    do {
      id2 = ChooseInternal(rng, id1, range, requester, nrequesters);
      ++iters;
    } while (std::find(id2s.begin(), id2s.begin() + i, id2) != id2s.begin() + i && iters <= 100);
    id2s[i] = id2;
  }
  return id2s;
}

}  // namespace farm::linkbench
