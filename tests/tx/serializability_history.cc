#include "tests/tx/serializability_history.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace farm::tx::testing {

using farm::testing::HistoryChecker;
using farm::testing::HistoryOp;
using farm::testing::HistoryOutcome;
using farm::testing::HistoryTransaction;

std::string FormatTransaction(const HistoryTransaction& t) {
  const char outcome = t.outcome == HistoryOutcome::kCommitted ? 'c'
                       : t.outcome == HistoryOutcome::kAborted ? 'a'
                                                               : 'u';
  std::string line = absl::StrFormat("T %x %d %d %c", t.id, t.start_ns, t.end_ns, outcome);
  for (const HistoryOp& op : t.ops) {
    absl::StrAppendFormat(&line, " %c%x=%x", op.kind == HistoryOp::Kind::kRead ? 'r' : 'w', op.key,
                          op.value);
  }
  return line;
}

bool ParseTransaction(absl::string_view line, HistoryTransaction* t) {
  std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (w.size() < 5 || w[0] != "T" || !absl::SimpleHexAtoi(w[1], &t->id) ||
      !absl::SimpleAtoi(w[2], &t->start_ns) || !absl::SimpleAtoi(w[3], &t->end_ns) ||
      w[4].size() != 1) {
    return false;
  }
  switch (w[4][0]) {
    case 'c':
      t->outcome = HistoryOutcome::kCommitted;
      break;
    case 'a':
      t->outcome = HistoryOutcome::kAborted;
      break;
    case 'u':
      t->outcome = HistoryOutcome::kUnknown;
      break;
    default:
      return false;
  }
  for (size_t i = 5; i < w.size(); ++i) {
    const absl::string_view op = w[i];
    const size_t eq = op.find('=');
    uint64_t key, value;
    if (op.size() < 4 || eq == absl::string_view::npos ||
        !absl::SimpleHexAtoi(op.substr(1, eq - 1), &key) ||
        !absl::SimpleHexAtoi(op.substr(eq + 1), &value)) {
      return false;
    }
    if (op[0] == 'r')
      t->Read(key, value);
    else if (op[0] == 'w')
      t->Write(key, value);
    else
      return false;
  }
  return true;
}

std::string DescribeViolation(const absl::Status& verdict, const HistoryChecker& checker,
                              const std::map<uint64_t, NodeId>& owner) {
  std::map<uint64_t, const HistoryTransaction*> by_id;
  for (const HistoryTransaction& t : checker.history()) by_id.emplace(t.id, &t);
  std::vector<uint64_t> named;
  const std::string message(verdict.message());
  for (size_t at = message.find('T'); at != std::string::npos; at = message.find('T', at + 1)) {
    size_t end = at + 1;
    while (end < message.size() && absl::ascii_isdigit(message[end])) ++end;
    uint64_t id;
    if (end > at + 1 && absl::SimpleAtoi(message.substr(at + 1, end - at - 1), &id) &&
        by_id.contains(id) && std::find(named.begin(), named.end(), id) == named.end()) {
      named.push_back(id);
    }
  }
  uint64_t first = UINT64_MAX;
  for (uint64_t id : named) first = std::min(first, by_id[id]->start_ns);
  std::string out;
  for (uint64_t id : named) {
    const HistoryTransaction& t = *by_id[id];
    const NodeId node = static_cast<NodeId>(id >> 48);
    std::vector<NodeId> primaries;
    bool writes = false;
    for (const HistoryOp& op : t.ops) {
      writes |= op.kind == HistoryOp::Kind::kWrite;
      auto it = owner.find(op.key);
      const NodeId p = it == owner.end() ? 0 : it->second;
      if (std::find(primaries.begin(), primaries.end(), p) == primaries.end())
        primaries.push_back(p);
    }
    std::string kind = id == 1                        ? "final read-only transaction"
                       : !writes && t.ops.size() == 1 ? "lock-free read"
                       : !writes                      ? "read-only transaction (validated)"
                       : primaries.size() > 1         ? "read-modify-write, distributed commit"
                       : primaries[0] == node
                           ? "read-modify-write, single-machine commit"
                           : absl::StrCat("read-modify-write, shipped to node ", primaries[0]);
    absl::StrAppendFormat(&out, "  T%d: node %d thread %d, %s, %s, [%+.1f us, %+.1f us]:", id, node,
                          (id >> 40) & 0xff, kind,
                          t.outcome == HistoryOutcome::kCommitted ? "committed" : "not committed",
                          static_cast<double>(t.start_ns - first) / 1e3,
                          static_cast<double>(t.end_ns - first) / 1e3);
    for (const HistoryOp& op : t.ops) {
      auto it = owner.find(op.key);
      absl::StrAppendFormat(&out, " %s(%x@node%d)=%d",
                            op.kind == HistoryOp::Kind::kRead ? "r" : "w", op.key,
                            it == owner.end() ? 0 : it->second, op.value);
    }
    out += "\n";
  }
  return out;
}

}  // namespace farm::tx::testing
