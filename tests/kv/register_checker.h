// Linearizability of one key's history (a register with get, put and remove), by the
// Wing & Gong search with memoization (Lowe's variant): find an order of the operations
// that respects real time (an operation that ended before another started comes first)
// and the register's semantics. Puts write values unique per key; a put and a remove
// report whether the key existed before them, a get what it saw.
//
// The history is cut into segments where no operation is in flight, and searched one
// segment at a time, carrying the set of states some order of the history so far can
// end in: the cost grows with the longest run of overlapping operations, not with the
// history's length, and a violation is reported with the window it lies in.
#ifndef FARM_TESTS_KV_REGISTER_CHECKER_H_
#define FARM_TESTS_KV_REGISTER_CHECKER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace farm::kv::testing {

struct RegisterOp {
  enum class Kind { kGet, kPut, kRemove };
  Kind kind = Kind::kGet;
  std::optional<std::string> value;  // kGet: what it saw; kPut: what it wrote
  bool existed = false;              // kPut, kRemove: the key existed before
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // An update whose outcome its client never learned (the cluster died under it): it
  // took effect once within [start_ns, end_ns] or not at all, and `existed` is unknown.
  // A pending get says nothing and is ignored.
  bool pending = false;
};

// OK, or FailedPrecondition listing the first segment no order can place (a window of
// overlapping operations, times relative to the first); the key starts absent.
// ResourceExhausted when one segment would take more than `max_states` search states.
absl::Status CheckRegister(std::vector<RegisterOp> ops, uint64_t max_states = 2'000'000);

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_REGISTER_CHECKER_H_
