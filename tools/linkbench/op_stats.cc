#include "tools/linkbench/op_stats.h"

namespace farm::linkbench {

void OpStats::Merge(const OpStats& o) {
  for (size_t i = 0; i < kOpTypeCount; ++i) {
    latency[i].Merge(o.latency[i]);
    errors[i] += o.errors[i];
  }
  multiget_found += o.multiget_found;
  multiget_not_found += o.multiget_not_found;
  history_queries += o.history_queries;
  range_rows += o.range_rows;
}

uint64_t OpStats::TotalOps() const {
  uint64_t n = 0;
  for (const auto& h : latency) n += h.count();
  return n;
}

}  // namespace farm::linkbench
