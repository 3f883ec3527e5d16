// LinkCounts: how many links each id1 gets in the load, as LinkBench's ID2Chooser and
// LinkDistributions compute it with nlinks_func = real, and the id2 choices of the
// request phase that depend on it.
//
//   total(id1)       = RealNlinks(rank), rank = nlinks shuffler's inverse of id1 - startid1
//   count(id1, t)    = (quirk) m + 1 if t's index < total - m, else m, with m = total / k
//                      (k link types): LinkBench uses `total - total/k` as the leftover,
//                      so nearly every node gets floor(total/k) + 1 links per type
//   load id2s        = id1 + j for j in [0, count) (randomid2max = 0)
//   request id2      = id1 + uniform[0, ceil(count / pExist)) (pExist: add 0.05,
//                      update 0.9, delete 0.9, get 0.5)
//
// Immutable; share between threads (each with its own JavaRandom).
#ifndef FARM_TOOLS_LINKBENCH_LINK_COUNTS_H_
#define FARM_TOOLS_LINKBENCH_LINK_COUNTS_H_

#include <cstdint>
#include <vector>

#include "graph/types.h"
#include "tools/linkbench/distribution_data.h"
#include "tools/linkbench/java_random.h"
#include "tools/linkbench/shuffler.h"
#include "tools/linkbench/workload.h"

namespace farm::linkbench {

inline constexpr double kPGetExist = 0.5;
inline constexpr double kPUpdateExist = 0.9;
inline constexpr double kPDeleteExist = 0.9;
inline constexpr double kPAddExist = 0.05;

class LinkCounts {
 public:
  // `nlinks` must outlive this.
  LinkCounts(const Cdf& nlinks, const Workload& workload);

  // The links of id1 over all types; 0 outside [startid1, maxid1).
  int64_t Total(int64_t id1) const;
  // The links of id1 of one type (the per-type split quirk).
  int64_t ForType(int64_t id1, int64_t link_type) const;
  // LinkBench's link types: DEFAULT_LINK_TYPE + i.
  int64_t LinkType(int i) const { return graph::kDefaultLinkType + i; }
  int link_type_count() const { return link_type_count_; }
  int64_t ChooseLinkType(JavaRandom& rng) const {
    return graph::kDefaultLinkType + rng.NextInt(link_type_count_);
  }
  // The id1 holding the most links (rank 0: the hub).
  int64_t HubId() const { return startid1_ + shuffler_.Permute(0); }

  // id2 for the j-th loaded link of id1.
  int64_t ChooseForLoad(JavaRandom& rng, int64_t id1, int64_t j) const;
  // An id2 for a request that exists with probability about p_exist.
  int64_t ChooseForOp(JavaRandom& rng, int64_t id1, int64_t link_type, double p_exist,
                      int requester, int nrequesters) const;
  // n distinct-ish id2s (LinkBench's chooseMultipleForOp: retries up to 100 times for a
  // fresh one; when the range is no larger than n, id1 + 0 .. id1 + n - 1).
  std::vector<int64_t> ChooseMultipleForOp(JavaRandom& rng, int64_t id1, int64_t link_type, int n,
                                           double p_exist, int requester, int nrequesters) const;

 private:
  int64_t Range(double p_exist, int64_t nlinks) const;
  int64_t ChooseInternal(JavaRandom& rng, int64_t id1, int64_t range, int requester,
                         int nrequesters) const;
  int64_t FixId2(int64_t id2, int requester, int nrequesters) const;

  const Cdf& nlinks_;
  const int64_t startid1_, maxid1_;
  const int link_type_count_;
  const int64_t randomid2max_;
  const int id2gen_config_;
  const InvertibleShuffler shuffler_;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_LINK_COUNTS_H_
