// OpStats: what one requester thread measured, per operation type: a latency histogram
// (tools/ycsb/latency_histogram.h: log-linear buckets, no allocation per record),
// error counts, and LinkBench's informational counters. Threads merge theirs after
// the phase. Not thread-safe; about 100 KiB, so keep it on the heap.
#ifndef FARM_TOOLS_LINKBENCH_OP_STATS_H_
#define FARM_TOOLS_LINKBENCH_OP_STATS_H_

#include <array>
#include <cstdint>

#include "tools/linkbench/op_type.h"
#include "tools/ycsb/latency_histogram.h"

namespace farm::linkbench {

struct OpStats {
  std::array<ycsb::LatencyHistogram, kOpTypeCount> latency;
  std::array<uint64_t, kOpTypeCount> errors{};
  uint64_t multiget_found = 0;      // links returned by multigets
  uint64_t multiget_not_found = 0;  // id2s asked for and not returned
  uint64_t history_queries = 0;     // getlinklist re-fetches of older links
  uint64_t range_rows = 0;          // rows returned by getlinklist

  void Record(OpType op, uint64_t ns) { latency[static_cast<size_t>(op)].Record(ns); }
  void Merge(const OpStats& other);
  uint64_t TotalOps() const;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_OP_STATS_H_
