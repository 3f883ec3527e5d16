// OpStats: what one client thread measured, per operation type: a latency histogram of
// the operations that completed, and counts of those that failed and of reads that did
// not find a record. Mergeable; one per thread; not thread-safe.
//
// Counting rules (the runners follow them):
//   - Recorded (latency and count): the store answered. A read, read-modify-write or
//     scan whose record (or some of whose records) was missing is still recorded, and
//     also counted in not_found.
//   - Failed (errors; no latency): the store returned an error, or a value that does
//     not belong to its key.
#ifndef FARM_TOOLS_YCSB_OP_STATS_H_
#define FARM_TOOLS_YCSB_OP_STATS_H_

#include <array>
#include <cstdint>
#include <string>

#include "tools/ycsb/latency_histogram.h"
#include "tools/ycsb/op_type.h"

namespace farm::ycsb {

struct OpTypeStats {
  LatencyHistogram latency;
  uint64_t errors = 0;
  uint64_t not_found = 0;
};

class OpStats {
 public:
  void Record(OpType t, uint64_t ns) { of_[OpIndex(t)].latency.Record(ns); }
  void RecordNotFound(OpType t) { ++of_[OpIndex(t)].not_found; }
  // Keeps the first error's message.
  void RecordError(OpType t, const std::string& message) {
    ++of_[OpIndex(t)].errors;
    if (first_error_.empty()) first_error_ = message;
  }
  void Merge(const OpStats& other);

  const OpTypeStats& of(OpType t) const { return of_[OpIndex(t)]; }
  // Operations recorded, over all types.
  uint64_t completed() const;
  uint64_t errors() const;
  // "" when none.
  const std::string& first_error() const { return first_error_; }

 private:
  std::array<OpTypeStats, kNumOpTypes> of_;
  std::string first_error_;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_OP_STATS_H_
