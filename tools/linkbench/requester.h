// Requester: one request-phase thread's generator, as LinkBenchRequest.oneRequest. Each
// request draws r = uniform[0, 100) and picks the first op of the cumulative mix with
// r <= cum; then:
//   ADD_LINK / UPDATE_LINK  id1 from the link-write distribution, a random link type,
//       id2 by pExist (0.05 / 0.9), time now, version 0, visible, data from the
//       link_add / link_up generator: addLink (quirk: an update is an addLink)
//   DELETE_LINK  pExist 0.9, expunge = false (quirk: always)
//   COUNT_LINK, MULTIGET_LINK (Geometric size, pExist 0.5), GET_LINKS_LIST  id1 from the
//       link-read distribution; with probability getlinklist_history (and a non-empty
//       cache) a list instead re-fetches links older than the last one of an earlier
//       full page: (0, last time, offset 1, limit 10000); full pages are cached (2048
//       entries, random eviction)
//   ADD_NODE  version 1, time now (s); ids continue from maxid1 and are not touched again
//   UPDATE_NODE (version 2) / DELETE_NODE / GET_NODE  ids from the node distributions
// Latency is timed around the store call only.
//
// Not thread-safe: one per thread, with its own JavaRandom; the model is shared.
#ifndef FARM_TOOLS_LINKBENCH_REQUESTER_H_
#define FARM_TOOLS_LINKBENCH_REQUESTER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "graph/types.h"
#include "tools/linkbench/backend.h"
#include "tools/linkbench/java_random.h"
#include "tools/linkbench/model.h"
#include "tools/linkbench/motif_generator.h"
#include "tools/linkbench/op_stats.h"

namespace farm::linkbench {

class Requester {
 public:
  Requester(const WorkloadModel& model, int requester_id, int nrequesters, int64_t seed);

  // Chooses and runs one request on `conn`, recording it in `stats` (its latency, or an
  // error). The store's error, if any, is returned naming the operation.
  absl::Status RunOne(Connection& conn, OpStats& stats);

  // The op a draw of r in [0, 100) selects (for tests).
  OpType ChooseOp(double r) const;

 private:
  absl::Status GetLinkList(Connection& conn, OpStats& stats, uint64_t& ns);
  void AddTailEntry(const graph::Link& last);
  void RemoveTailEntry(size_t pos);

  const WorkloadModel& model_;
  const Workload& w_;
  const int requester_id_;
  const int nrequesters_;
  const std::array<double, kOpTypeCount> cumulative_;
  JavaRandom rng_;
  MotifGenerator link_add_gen_, link_up_gen_, node_add_gen_, node_up_gen_;
  // LinkBench's listTailHistory and its index by (id1, type).
  std::vector<graph::Link> tail_history_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, size_t> tail_index_;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_REQUESTER_H_
