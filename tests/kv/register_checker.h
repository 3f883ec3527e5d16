// Linearizability of one key's history (a register with get, put and remove), by the
// Wing & Gong search with memoization (Lowe's variant): find an order of the operations
// that respects real time (an operation that ended before another started comes first)
// and the register's semantics. Puts write values unique per key; a put and a remove
// report whether the key existed before them, a get what it saw.
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
};

// OK, or FailedPrecondition naming the first operation no order can place; the key
// starts absent. InvalidArgument when the search would exceed `max_states`.
absl::Status CheckRegister(std::vector<RegisterOp> ops, uint64_t max_states = 2'000'000);

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_REGISTER_CHECKER_H_
