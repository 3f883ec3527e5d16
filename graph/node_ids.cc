#include "graph/node_ids.h"

#include <coroutine>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/graph_tx.h"
#include "graph/index.h"
#include "kv/messages.h"

namespace farm::graph {
namespace {

// co_await ReadCounter(index) -> StatusOr<int64_t>: the id counter as committed (a
// lock-free lookup; 0 when no id was ever reserved).
class ReadCounter {
 public:
  explicit ReadCounter(kv::TableClient& index) : index_(index) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    index_.Get(kNextNodeIdKey, [this, h](absl::StatusOr<std::optional<absl::string_view>> v) {
      if (!v.ok()) {
        result_ = v.status();
      } else if (!v->has_value()) {
        result_ = 0;
      } else if (int64_t last = 0; absl::SimpleAtoi(**v, &last)) {
        result_ = last;
      } else {
        result_ = absl::InternalError(absl::StrCat("the node id counter (", kNextNodeIdKey,
                                                   ") does not hold a number: a corrupt index"));
      }
      h.resume();
    });
  }
  absl::StatusOr<int64_t> await_resume() { return std::move(result_); }

 private:
  kv::TableClient& index_;
  absl::StatusOr<int64_t> result_ = absl::UnknownError("not completed");
};

// co_await Reserve(index, k) -> StatusOr<int64_t>: the counter after an increment by k
// (reserving the k ids up to it), shipped to its primary and combined there with the
// other updates of the key (kv's update path: no conflicts between machines).
class Reserve {
 public:
  Reserve(kv::TableClient& index, uint64_t k) : index_(index), k_(k) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    index_.Update(kv::OpKind::kIncrement, kNextNodeIdKey, "", static_cast<int64_t>(k_),
                  [this, h](absl::StatusOr<kv::KeyOpResult> r) {
                    if (!r.ok()) {
                      result_ = r.status();
                    } else if (!r->status.ok()) {
                      result_ = r->status;
                    } else {
                      result_ = r->number;
                    }
                    h.resume();
                  });
  }
  absl::StatusOr<int64_t> await_resume() { return std::move(result_); }

 private:
  kv::TableClient& index_;
  uint64_t k_;
  absl::StatusOr<int64_t> result_ = absl::UnknownError("not completed");
};

}  // namespace

bool NodeIdBlock::TakeFromBlock(int64_t counter, uint64_t seen_changes, uint64_t n, int64_t* first, bool* busy) {
  MutexLock lock(&mu_);
  *busy = busy_ || changes_ != seen_changes;  // the counter read may predate a change
  if (*busy) {
    ++stats_.waits;
    return false;
  }
  if (held_ && last_ != counter) {  // invariant 2
    held_ = false;
    ++stats_.dropped;
  }
  if (held_ && static_cast<uint64_t>(last_ - next_ + 1) >= n) {
    *first = next_;
    next_ += static_cast<int64_t>(n);
    ++stats_.takes;
    return true;
  }
  busy_ = true;  // this Take reserves (invariant 3)
  return false;
}

Task<absl::StatusOr<int64_t>> NodeIdBlock::Take(Context& ctx, kv::TableClient& index, uint64_t n) {
  if (n == 0 || n > kMaxIdsPerTake) {
    co_return absl::InvalidArgumentError(absl::StrCat("node ids are taken 1 to ", kMaxIdsPerTake, " at a time, not ", n));
  }
  while (true) {
    uint64_t seen = 0;
    {
      MutexLock lock(&mu_);
      seen = changes_;
    }
    absl::StatusOr<int64_t> counter = co_await ReadCounter(index);
    if (!counter.ok()) co_return counter.status();
    int64_t first = 0;
    bool busy = false;
    if (TakeFromBlock(*counter, seen, n, &first, &busy)) co_return first;
    if (busy) {
      co_await SleepFor(ctx, kWaitPoll);
      continue;
    }
    // This Take reserves: the ids it asks for and a block beyond.
    const uint64_t k = n + kNodeIdBlock;
    absl::StatusOr<int64_t> top = co_await Reserve(index, k);
    absl::StatusOr<int64_t> result = absl::UnknownError("unset");
    {
      MutexLock lock(&mu_);
      busy_ = false;
      ++changes_;
      if (!top.ok()) {
        result = top.status();
      } else {
        ++stats_.reservations;
        const int64_t from = *top - static_cast<int64_t>(k) + 1;
        if (!held_ || last_ + 1 != from) {  // invariant 4: extend only what follows
          if (held_) ++stats_.dropped;
          next_ = from;
        }
        held_ = true;
        last_ = *top;
        result = next_;
        next_ += static_cast<int64_t>(n);
        ++stats_.takes;
      }
    }
    co_return result;
  }
}

Task<absl::Status> NodeIdBlock::Reset(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                      int64_t start_id) {
  while (true) {
    {
      MutexLock lock(&mu_);
      if (!busy_) {
        busy_ = true;
        held_ = false;
        break;
      }
      ++stats_.waits;
    }
    co_await SleepFor(ctx, kWaitPoll);
  }
  absl::StatusOr<bool> reset = co_await RunTx<bool>(ctx, std::move(index), stats,
                                                    [start_id](TxScope& s) -> Task<absl::StatusOr<bool>> {
                                                      absl::Status st = co_await ResetNodeIdsTx(s, start_id);
                                                      if (!st.ok()) co_return st;
                                                      co_return true;
                                                    });
  {
    MutexLock lock(&mu_);
    busy_ = false;
    held_ = false;
    ++changes_;
  }
  co_return reset.status();
}

void NodeIdBlock::Forget() {
  MutexLock lock(&mu_);
  held_ = false;
}

NodeIdStats NodeIdBlock::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

}  // namespace farm::graph
