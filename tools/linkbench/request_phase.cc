#include "tools/linkbench/request_phase.h"

#include <atomic>
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
  std::atomic<uint64_t> done{0}, errors{0};
  std::atomic<int> running{n}, aborted{0};
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(options.max_time_s));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      Connection& conn = *conns[i];
      Requester& req = *requesters[i];
      OpStats& st = *stats[i];
      int64_t my_errors = 0;
      for (int64_t k = 0; k < options.requests; ++k) {
        absl::Status s = req.RunOne(conn, st);
        ++done;
        if (!s.ok()) {
          ++errors;
          {
            absl::MutexLock lock(&mu);
            if (first_error.empty()) first_error = s.ToString();
          }
          if (options.max_failed >= 0 && ++my_errors > options.max_failed) {
            ++aborted;
            break;
          }
        }
        if ((k & 63) == 0 && std::chrono::steady_clock::now() > deadline) break;
      }
      --running;
    });
  }
  const uint64_t total = static_cast<uint64_t>(n) * options.requests;
  ProgressLine progress(options.progress);
  auto line = [&] {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.stats = std::make_unique<OpStats>();
  for (const auto& s : stats) result.stats->Merge(*s);
  result.requests = done.load();
  result.errors = errors.load();
  result.aborted_requesters = aborted.load();
  result.first_error = first_error;
  return result;
}

}  // namespace farm::linkbench
