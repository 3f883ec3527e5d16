#include "tools/ycsb/op_stats.h"

namespace farm::ycsb {

void OpStats::Merge(const OpStats& other) {
  for (size_t i = 0; i < kNumOpTypes; ++i) {
    of_[i].latency.Merge(other.of_[i].latency);
    of_[i].errors += other.of_[i].errors;
    of_[i].not_found += other.of_[i].not_found;
  }
  if (first_error_.empty()) first_error_ = other.first_error_;
}

uint64_t OpStats::completed() const {
  uint64_t n = 0;
  for (const OpTypeStats& s : of_) n += s.latency.count();
  return n;
}

uint64_t OpStats::errors() const {
  uint64_t n = 0;
  for (const OpTypeStats& s : of_) n += s.errors;
  return n;
}

}  // namespace farm::ycsb
