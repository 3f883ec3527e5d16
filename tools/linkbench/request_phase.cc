#include "tools/linkbench/request_phase.h"

#include <atomic>
#include <barrier>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "tools/linkbench/progress_line.h"
#include "tools/linkbench/requester.h"

namespace farm::linkbench {

absl::StatusOr<RequestResult> RunRequestPhase(Backend& backend, const WorkloadModel& model,
                                              const RequestOptions& options) {
  const int n = options.requesters;
  JavaRandom master(options.seed);
  std::vector<std::unique_ptr<Connection>> conns;
  std::vector<std::unique_ptr<Requester>> requesters;
  std::vector<std::unique_ptr<OpStats>> stats;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<std::unique_ptr<Connection>> c = backend.Connect();
    if (!c.ok()) return c.status();
    conns.push_back(*std::move(c));
    requesters.push_back(std::make_unique<Requester>(model, i, n, master.NextLong()));
    stats.push_back(std::make_unique<OpStats>());
  }

  absl::Mutex mu;
  std::string first_error;
  std::atomic<uint64_t> warmed{0}, done{0}, errors{0};
  std::atomic<int> running{n}, aborted{0};
  using Clock = std::chrono::steady_clock;
  const auto max_time = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.max_time_s));
  // Set once, by the barrier's completion, when every requester is warm (or gone):
  // the measured requests start there. Read by the progress line meanwhile.
  std::atomic<Clock::rep> measuring_since{0};
  auto start_measuring = [&]() noexcept {
    backend.StartMeasuring();
    measuring_since.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  };
  std::barrier warm(n, start_measuring);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      Connection& conn = *conns[i];
      Requester& req = *requesters[i];
      int64_t my_errors = 0;
      // false when the requester stops at this failure.
      auto failed = [&](const absl::Status& s) {
        ++errors;
        {
          absl::MutexLock lock(&mu);
          if (first_error.empty()) first_error = s.ToString();
        }
        if (options.max_failed >= 0 && ++my_errors > options.max_failed) {
          ++aborted;
          return false;
        }
        return true;
      };
      OpStats unmeasured;
      for (int64_t k = 0; k < options.warmup_requests; ++k) {
        absl::Status s = req.RunOne(conn, unmeasured);
        ++warmed;
        if (!s.ok() && !failed(s)) {
          warm.arrive_and_drop();
          --running;
          return;
        }
      }
      warm.arrive_and_wait();
      const auto deadline = Clock::time_point(Clock::duration(measuring_since.load(std::memory_order_acquire))) + max_time;
      OpStats& st = *stats[i];
      for (int64_t k = 0; k < options.requests; ++k) {
        absl::Status s = req.RunOne(conn, st);
        ++done;
        if (!s.ok() && !failed(s)) break;
        if ((k & 63) == 0 && Clock::now() > deadline) break;
      }
      --running;
    });
  }
  const uint64_t total = static_cast<uint64_t>(n) * options.requests;
  const uint64_t warmup_total = static_cast<uint64_t>(n) * options.warmup_requests;
  const auto phase_start = Clock::now();
  ProgressLine progress(options.progress);
  auto line = [&] {
    const Clock::rep since = measuring_since.load(std::memory_order_acquire);
    if (since == 0) {
      return absl::StrFormat("warm-up: %3.0f%%  %d/%d", 100.0 * warmed.load() / std::max<uint64_t>(warmup_total, 1),
                             warmed.load(), warmup_total);
    }
    const double secs = std::chrono::duration<double>(Clock::now() - Clock::time_point(Clock::duration(since))).count();
    return absl::StrFormat("requests: %3.0f%%  %d/%d, %.0f ops/s, %.1f/%.0f s", 100.0 * done.load() / total,
                           done.load(), total, done.load() / std::max(secs, 1e-9), secs, options.max_time_s);
  };
  while (running.load() > 0) {
    progress.Show(line());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::thread& t : threads) t.join();
  progress.Finish(line());

  RequestResult result;
  const Clock::rep since = measuring_since.load(std::memory_order_acquire);
  result.seconds =
      std::chrono::duration<double>(Clock::now() - (since == 0 ? phase_start : Clock::time_point(Clock::duration(since))))
          .count();
  result.stats = std::make_unique<OpStats>();
  for (const auto& s : stats) result.stats->Merge(*s);
  result.requests = done.load();
  result.errors = errors.load();
  result.aborted_requesters = aborted.load();
  result.first_error = first_error;
  return result;
}

}  // namespace farm::linkbench
