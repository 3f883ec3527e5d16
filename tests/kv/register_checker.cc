#include "tests/kv/register_checker.h"

#include <algorithm>
#include <climits>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace farm::kv::testing {
namespace {

// A register state: absent, or the index (in the sorted history) of the put that wrote
// the value it holds (values are unique per put).
constexpr int kAbsent = -1;

using Kind = RegisterOp::Kind;

// Searches the orders of a segment of operations [begin, end) that respect real time
// and the register's semantics, memoized on (operations done, state). Recursion goes
// as deep as the segment is long.
class OrderSearch {
 public:
  OrderSearch(const std::vector<RegisterOp>& ops, size_t begin, size_t end,
              const absl::flat_hash_map<std::string, int>& writer_of, uint64_t max_states)
      : ops_(ops),
        begin_(begin),
        size_(end - begin),
        writer_of_(writer_of),
        max_states_(max_states) {
    done_.assign((size_ + 63) / 64, 0);
  }

  // Adds to `ends` every state an order from one of `from` ends in.
  void CollectEnds(const absl::flat_hash_set<int>& from, absl::flat_hash_set<int>& ends) {
    ends_ = &ends;
    for (int state : from) Dfs(state, 0);
  }

  bool over_budget() const { return states_ > max_states_; }

 private:
  bool Done(size_t i) const { return (done_[i / 64] >> (i % 64)) & 1; }
  void Flip(size_t i) { done_[i / 64] ^= uint64_t{1} << (i % 64); }
  const RegisterOp& Op(size_t i) const { return ops_[begin_ + i]; }
  bool LeavesAsIs(const RegisterOp& op, int state) const {
    if (op.pending) return false;  // it may also change the state: both are searched
    if (op.kind == Kind::kGet) return (op.value ? writer_of_.at(*op.value) : kAbsent) == state;
    return op.kind == Kind::kRemove && !op.existed && state == kAbsent;
  }

  // Explores every order of the operations not done, from `state`.
  void Dfs(int state, size_t count) {
    if (count == size_) {
      ends_->insert(state);
      return;
    }
    if (++states_ > max_states_) return;
    if (!seen_.insert({done_, state}).second) return;
    // Candidates: not done, and started before every other open operation ended.
    int64_t min_end = INT64_MAX;
    size_t first_open = size_;
    for (size_t i = 0; i < size_; ++i) {
      if (Done(i)) continue;
      if (first_open == size_) first_open = i;
      min_end = std::min(min_end, Op(i).end_ns);
    }
    // An operation that leaves the state as it is (a get that sees it, a remove of an
    // absent key) can be placed now without losing any order's end state: whatever had
    // to precede it is done, and placing it early constrains nothing else.
    for (size_t i = first_open; i < size_ && Op(i).start_ns <= min_end; ++i) {
      if (Done(i) || !LeavesAsIs(Op(i), state)) continue;
      Flip(i);
      Dfs(state, count + 1);
      Flip(i);
      return;
    }
    for (size_t i = first_open; i < size_ && Op(i).start_ns <= min_end && !over_budget(); ++i) {
      const RegisterOp& op = Op(i);
      if (Done(i) || op.kind == Kind::kGet) continue;
      if (op.pending) {  // it never took effect: placed as nothing
        Flip(i);
        Dfs(state, count + 1);
        Flip(i);
      } else if (op.existed != (state != kAbsent)) {
        continue;
      }
      Flip(i);
      Dfs(op.kind == Kind::kPut ? static_cast<int>(begin_ + i) : kAbsent, count + 1);
      Flip(i);
    }
  }

  const std::vector<RegisterOp>& ops_;
  const size_t begin_;
  const size_t size_;
  const absl::flat_hash_map<std::string, int>& writer_of_;
  const uint64_t max_states_;
  absl::flat_hash_set<int>* ends_ = nullptr;
  std::vector<uint64_t> done_;
  absl::flat_hash_set<std::pair<std::vector<uint64_t>, int>> seen_;
  uint64_t states_ = 0;
};

std::string Describe(const RegisterOp& op, int64_t origin) {
  const char* kind = op.kind == Kind::kGet ? "get" : op.kind == Kind::kPut ? "put" : "remove";
  std::string what = op.value ? *op.value : "-";
  if (what.size() > 24) what = absl::StrCat(what.substr(0, 21), "...");
  return absl::StrFormat("  %-6s %-24s existed=%s [%d, %d] us\n", kind, what,
                         op.pending ? "?(pending)" : op.existed ? "1" : "0",
                         (op.start_ns - origin) / 1000, (op.end_ns - origin) / 1000);
}

// A pending put whose value no get saw, in a history without removes, started after a
// completed put had ended (so the key exists throughout its window either way), changes
// nothing any operation observed: an order where it took effect has it overwritten
// before any get, and stays an order without it. Dropping it (it "did not take effect")
// leaves the history linearizable exactly when it was, and keeps the search small when
// a failure leaves many outcomes unknown (each pending put spans seconds and overlaps
// everything in them).
void DropUnseenPendingPuts(std::vector<RegisterOp>& ops) {
  absl::flat_hash_set<std::string> seen;
  int64_t first_put_end = std::numeric_limits<int64_t>::max();
  for (const RegisterOp& op : ops) {
    if (op.kind == Kind::kRemove) return;
    if (op.kind == Kind::kGet && op.value) seen.insert(*op.value);
    if (op.kind == Kind::kPut && !op.pending) first_put_end = std::min(first_put_end, op.end_ns);
  }
  ops.erase(std::remove_if(ops.begin(), ops.end(),
                           [&](const RegisterOp& op) {
                             return op.kind == Kind::kPut && op.pending && op.start_ns > first_put_end &&
                                    !seen.contains(*op.value);
                           }),
            ops.end());
}

}  // namespace

absl::Status CheckRegister(std::vector<RegisterOp> ops, uint64_t max_states) {
  ops.erase(std::remove_if(ops.begin(), ops.end(),
                           [](const RegisterOp& op) { return op.pending && op.kind == Kind::kGet; }),
            ops.end());
  DropUnseenPendingPuts(ops);
  std::sort(ops.begin(), ops.end(),
            [](const RegisterOp& a, const RegisterOp& b) { return a.start_ns < b.start_ns; });
  absl::flat_hash_map<std::string, int> writer_of;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == Kind::kPut) writer_of[*ops[i].value] = static_cast<int>(i);
  }
  for (const RegisterOp& op : ops) {
    if (op.kind == Kind::kGet && op.value && !writer_of.contains(*op.value)) {
      return absl::FailedPreconditionError(
          absl::StrCat("a get saw a value no put wrote: ", *op.value));
    }
  }
  // Segments end where no operation is in flight: every operation before the cut ended
  // before every one after it started, so orders of the history are orders of the
  // segments joined at a state. Each segment's search collects every state it can end
  // in; the cost grows with the longest run of overlapping operations only.
  const int64_t origin = ops.empty() ? 0 : ops.front().start_ns;
  absl::flat_hash_set<int> states = {kAbsent};
  size_t begin = 0;
  while (begin < ops.size()) {
    size_t end = begin + 1;
    int64_t last_end = ops[begin].end_ns;
    while (end < ops.size() && ops[end].start_ns <= last_end)
      last_end = std::max(last_end, ops[end++].end_ns);
    OrderSearch segment(ops, begin, end, writer_of, max_states);
    absl::flat_hash_set<int> ends;
    segment.CollectEnds(states, ends);
    if (segment.over_budget()) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%d operations overlap without a pause from %d us on: more than %d states to search",
          end - begin, (ops[begin].start_ns - origin) / 1000, max_states));
    }
    if (ends.empty()) {
      std::string window;
      for (size_t i = begin; i < end && i < begin + 40; ++i) window += Describe(ops[i], origin);
      std::string before;
      for (int s : states)
        absl::StrAppend(&before, before.empty() ? "" : ", ",
                        s == kAbsent ? "absent" : *ops[s].value);
      return absl::FailedPreconditionError(
          absl::StrFormat("not linearizable: operations %d..%d of %d (overlapping, no order fits) "
                          "from state {%s}:\n%s",
                          begin, end - 1, ops.size(), before, window));
    }
    states = std::move(ends);
    begin = end;
  }
  return absl::OkStatus();
}

}  // namespace farm::kv::testing
