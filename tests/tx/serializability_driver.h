// The drivers the tx_node children run their workloads with (serializability_ser.h,
// serializability_bank.h). A Driver belongs to one worker thread of a node and is used
// only on that thread's event loop; it keeps a fixed number of operations in flight
// until a deadline and notifies once the last one has ended. From then on stats() is
// its thread's TxStats over the run; reader_stats() likewise for reads and retries_*
// (its other fields are the thread's totals); errors() what its operations found.
#ifndef FARM_TESTS_TX_SERIALIZABILITY_DRIVER_H_
#define FARM_TESTS_TX_SERIALIZABILITY_DRIVER_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "farm/base/mutex.h"
#include "farm/event/event_loop.h"
#include "farm/node/node.h"
#include "tx/thread_context.h"

namespace farm::tx::testing {

// Commit errors that leave the outcome unknown (farm.h).
bool OutcomeUnknown(const absl::Status& s);

// a - b, field by field.
tx::TxStats Minus(const tx::TxStats& a, const tx::TxStats& b);
// *into += s, field by field.
void Add(tx::TxStats* into, const tx::TxStats& s);

// The key=value fields of a DONE line for `s` (tx_committed=... served_single_machine=...).
std::string FormatTxStats(const tx::TxStats& s);

// What a driver found that fails the test (first few messages kept).
struct Errors {
  uint64_t count = 0;
  std::vector<std::string> first;
  void Add(std::string message) {
    if (++count <= 5) first.push_back(std::move(message));
  }
};

// A driver keeps `slots` operations in flight on its thread until the deadline, then
// reports when the last one ended. Subclasses start one operation in Launch(slot) and
// call Ended(slot) when it is over.
class Driver {
 public:
  Driver(node::Node* node, size_t thread, uint64_t seed)
      : node_(node), thread_(thread), ctx_(&node->context(thread)), rng_(seed) {}
  virtual ~Driver() = default;

  // On the driver's loop thread.
  void Start(EventLoop::Clock::time_point deadline, int slots, Notification* done) {
    deadline_ = deadline;
    done_ = done;
    before_ = ctx_->stats();
    reader_before_ = ctx_->reader().stats();
    in_flight_ = slots;
    for (int s = 0; s < slots; ++s) Launch(s);
  }

  const tx::TxStats& stats() const { return stats_; }
  const tx::ObjectReaderStats& reader_stats() const { return reader_stats_; }
  Errors& errors() { return errors_; }

 protected:
  virtual void Launch(int slot) = 0;

  void Ended(int slot) {
    if (EventLoop::Clock::now() < deadline_) return Launch(slot);
    if (--in_flight_ > 0) return;
    stats_ = Minus(ctx_->stats(), before_);
    reader_stats_ = ctx_->reader().stats();
    reader_stats_.reads -= reader_before_.reads;
    reader_stats_.retries_locked -= reader_before_.retries_locked;
    reader_stats_.retries_inconsistent -= reader_before_.retries_inconsistent;
    reader_stats_.retries_slow -= reader_before_.retries_slow;
    done_->Notify();
  }

  uint64_t Uniform(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  // `n` distinct indexes below `of`.
  std::vector<size_t> Pick(size_t n, size_t of) {
    std::vector<size_t> out;
    while (out.size() < n) {
      const size_t k = Uniform(of);
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    }
    return out;
  }
  // Unique across the run: node, thread, counter; never 0.
  uint64_t NextValue() {
    return (uint64_t{node_->options().node_id} << 48) | (uint64_t{thread_} << 40) | ++counter_;
  }

  node::Node* const node_;
  const size_t thread_;
  tx::ThreadContext* const ctx_;
  std::mt19937_64 rng_;
  Errors errors_;

 private:
  EventLoop::Clock::time_point deadline_;
  Notification* done_ = nullptr;
  int in_flight_ = 0;
  uint64_t counter_ = 0;
  tx::TxStats before_, stats_;
  tx::ObjectReaderStats reader_before_, reader_stats_;
};

// Prints one ERROR line per kept message, and one for how many more there were.
void PrintErrors(Errors& e);

// Runs one driver per worker thread until `ms` have passed and waits for them.
template <typename D>
bool RunDrivers(node::Node& node, std::vector<std::unique_ptr<D>>& drivers, int64_t ms, int slots) {
  std::vector<std::unique_ptr<Notification>> done;
  const auto deadline = EventLoop::Clock::now() + std::chrono::milliseconds(ms);
  for (size_t t = 0; t < drivers.size(); ++t) {
    done.push_back(std::make_unique<Notification>());
    node.loop(t).Post([d = drivers[t].get(), deadline, slots, n = done.back().get()] {
      d->Start(deadline, slots, n);
    });
  }
  bool ok = true;
  for (auto& n : done)
    ok &= n->WaitForNotificationWithTimeout(absl::Milliseconds(ms) + absl::Seconds(60));
  return ok;
}

}  // namespace farm::tx::testing

#endif  // FARM_TESTS_TX_SERIALIZABILITY_DRIVER_H_
