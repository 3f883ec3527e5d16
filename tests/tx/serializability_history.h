// Histories of the ser workload: a recorded transaction as one text line, and, for a
// HistoryChecker verdict, a description of the transactions it names.
//
// A line is "T <id> <start_ns> <end_ns> <c|a|u> (r|w)<key>=<value>..." (ids, keys, values
// in hex); ParseTransaction reads back what FormatTransaction writes (HistoryOp::previous
// is not recorded). Keys are objects' raw addresses. Ids are unique within a run:
// node << 48 | thread << 40 | counter (Driver::NextValue, serializability_driver.h),
// whose node field is never 0, so id 1 is free for the final read-only transaction
// (SERFINAL).
#ifndef FARM_TESTS_TX_SERIALIZABILITY_HISTORY_H_
#define FARM_TESTS_TX_SERIALIZABILITY_HISTORY_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "tests/support/history_checker.h"

namespace farm::tx::testing {

std::string FormatTransaction(const farm::testing::HistoryTransaction& t);

// False if `line` is not a transaction line; `t` may be partly written then.
bool ParseTransaction(absl::string_view line, farm::testing::HistoryTransaction* t);

// For a violation: each transaction the checker names (T<id> in its message), with
// what it was — lock-free read, read-only or read-modify-write transaction and, for
// the last, the commit path implied by where its keys live — its node and thread (from
// the id, see Driver::NextValue), times relative to the first one, and its operations
// with each key's primary. `owner` maps keys to the node that allocated them.
std::string DescribeViolation(const absl::Status& verdict,
                              const farm::testing::HistoryChecker& checker,
                              const std::map<uint64_t, NodeId>& owner);

}  // namespace farm::tx::testing

#endif  // FARM_TESTS_TX_SERIALIZABILITY_HISTORY_H_
