#include "tests/kv/register_checker.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"

namespace farm::kv::testing {
namespace {

constexpr int kAbsent = -1;

class Search {
 public:
  Search(std::vector<RegisterOp> ops, uint64_t max_states) : ops_(std::move(ops)), max_states_(max_states) {
    std::sort(ops_.begin(), ops_.end(),
              [](const RegisterOp& a, const RegisterOp& b) { return a.start_ns < b.start_ns; });
    done_.assign((ops_.size() + 63) / 64, 0);
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].kind == RegisterOp::Kind::kPut) writer_of_[*ops_[i].value] = static_cast<int>(i);
    }
  }

  absl::Status Run() {
    for (const RegisterOp& op : ops_) {
      if (op.kind == RegisterOp::Kind::kGet && op.value && !writer_of_.contains(*op.value)) {
        return absl::FailedPreconditionError("a get saw a value no put wrote");
      }
    }
    if (Dfs(kAbsent, 0)) return absl::OkStatus();
    if (states_ > max_states_) return absl::InvalidArgumentError("history too large to check");
    return absl::FailedPreconditionError(absl::StrFormat(
        "not linearizable: %d operations, at most %d could be ordered (the next one started at %d ns)",
        ops_.size(), deepest_, deepest_ < ops_.size() ? ops_[first_open_at_deepest_].start_ns : 0));
  }

 private:
  bool Done(size_t i) const { return (done_[i / 64] >> (i % 64)) & 1; }
  void Flip(size_t i) { done_[i / 64] ^= uint64_t{1} << (i % 64); }

  // Can the operations not yet done be ordered, starting from register state `state`?
  bool Dfs(int state, size_t count) {
    if (count == ops_.size()) return true;
    if (++states_ > max_states_) return false;
    if (!seen_.insert({done_, state}).second) return false;
    // Candidates: not done, and started before every other open operation ended.
    int64_t min_end = INT64_MAX;
    size_t first_open = ops_.size();
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (Done(i)) continue;
      if (first_open == ops_.size()) first_open = i;
      min_end = std::min(min_end, ops_[i].end_ns);
    }
    if (count > deepest_) {
      deepest_ = count;
      first_open_at_deepest_ = first_open;
    }
    for (size_t i = first_open; i < ops_.size() && ops_[i].start_ns <= min_end; ++i) {
      if (Done(i)) continue;
      const RegisterOp& op = ops_[i];
      int next = state;
      switch (op.kind) {
        case RegisterOp::Kind::kGet: {
          const int saw = op.value ? writer_of_.at(*op.value) : kAbsent;
          if (saw != state) continue;
          break;
        }
        case RegisterOp::Kind::kPut:
          if (op.existed != (state != kAbsent)) continue;
          next = static_cast<int>(i);
          break;
        case RegisterOp::Kind::kRemove:
          if (op.existed != (state != kAbsent)) continue;
          next = kAbsent;
          break;
      }
      Flip(i);
      const bool ok = Dfs(next, count + 1);
      Flip(i);
      if (ok) return true;
    }
    return false;
  }

  std::vector<RegisterOp> ops_;
  const uint64_t max_states_;
  absl::flat_hash_map<std::string, int> writer_of_;
  std::vector<uint64_t> done_;
  absl::flat_hash_set<std::pair<std::vector<uint64_t>, int>> seen_;
  uint64_t states_ = 0;
  size_t deepest_ = 0;
  size_t first_open_at_deepest_ = 0;
};

}  // namespace

absl::Status CheckRegister(std::vector<RegisterOp> ops, uint64_t max_states) {
  return Search(std::move(ops), max_states).Run();
}

}  // namespace farm::kv::testing
