// log_bench: the durable log's group commit on this machine's disk. `--threads` appenders
// keep `--inflight` records of `--bytes` each outstanding on one LogWriter for
// `--seconds`, under each `--log_sync` policy; prints records/s, syncs/s, records per
// sync and the append-to-durable latency. A raw baseline first: one writer appending a
// record and fdatasync-ing it, one at a time (what a log without group commit gets).
//
//   build/tools/log_bench/log_bench --dir=/var/tmp/farm-log-bench
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "farm/base/command_line.h"
#include "farm/base/mutex.h"
#include "farm/storage/file_system.h"
#include "farm/storage/log_format.h"
#include "farm/storage/log_writer.h"
#include "tools/common/latency.h"

ABSL_FLAG(std::string, dir, "/var/tmp/farm-log-bench", "directory for the log (on the disk to measure)");
ABSL_FLAG(std::vector<std::string>, log_sync, (std::vector<std::string>{"always", "interval:1", "none"}),
          "policies to measure");
ABSL_FLAG(int, threads, 4, "appending threads");
ABSL_FLAG(int, inflight, 8, "records each thread keeps outstanding");
ABSL_FLAG(int, bytes, 200, "payload bytes per record (a commit record of a small transaction)");
ABSL_FLAG(double, seconds, 2, "duration of each run");

namespace farm::storage {
namespace {

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One sync per record, no grouping: the baseline.
void RunRawBaseline(FileSystem& fs, const std::string& path, const std::string& payload, double seconds) {
  std::filesystem::remove(path);
  absl::StatusOr<std::unique_ptr<WritableFile>> f = fs.OpenForAppend(path);
  if (!f.ok()) {
    std::fprintf(stderr, "log_bench: %s\n", f.status().ToString().c_str());
    return;
  }
  std::string record;
  EncodeRecord(0, payload, &record);
  LatencySamples lat;
  const uint64_t end = NowNs() + static_cast<uint64_t>(seconds * 1e9);
  const uint64_t start = NowNs();
  uint64_t n = 0;
  while (NowNs() < end) {
    const uint64_t t = NowNs();
    if (!(*f)->Append(record).ok() || !(*f)->Sync().ok()) break;
    lat.Add(NowNs() - t);
    ++n;
  }
  const double s = (NowNs() - start) / 1e9;
  std::printf("%-22s %12.0f %10.0f %8.1f %9.1f %9.1f\n", "write+fdatasync each", n / s, n / s, 1.0,
              lat.PercentileUs(50), lat.PercentileUs(99));
}

void RunPolicy(FileSystem& fs, const std::string& path, const std::string& payload, SyncPolicy policy) {
  std::filesystem::remove(path);
  absl::StatusOr<std::unique_ptr<LogWriter>> w = LogWriter::Open(&fs, path, 1, 0, policy);
  if (!w.ok()) {
    std::fprintf(stderr, "log_bench: %s\n", w.status().ToString().c_str());
    return;
  }
  const int threads = absl::GetFlag(FLAGS_threads);
  const int inflight = absl::GetFlag(FLAGS_inflight);
  const uint64_t end = NowNs() + static_cast<uint64_t>(absl::GetFlag(FLAGS_seconds) * 1e9);
  Mutex mu;
  LatencySamples lat;
  std::atomic<uint64_t> done{0}, failed{0};
  const LogWriterStats before = (*w)->stats();
  const uint64_t start = NowNs();
  std::vector<std::thread> appenders;
  for (int t = 0; t < threads; ++t) {
    appenders.emplace_back([&] {
      std::atomic<int> outstanding{0};
      while (NowNs() < end) {
        if (outstanding.load(std::memory_order_acquire) >= inflight) {
          std::this_thread::yield();
          continue;
        }
        outstanding.fetch_add(1);
        const uint64_t t0 = NowNs();
        (*w)->Append(0, payload, [&, t0](absl::Status s) {
          const uint64_t ns = NowNs() - t0;
          if (s.ok()) {
            done.fetch_add(1);
            MutexLock lock(&mu);
            lat.Add(ns);
          } else {
            failed.fetch_add(1);
          }
          outstanding.fetch_sub(1, std::memory_order_release);
        });
      }
      while (outstanding.load(std::memory_order_acquire) > 0) std::this_thread::yield();
    });
  }
  for (std::thread& t : appenders) t.join();
  const double s = (NowNs() - start) / 1e9;
  const LogWriterStats after = (*w)->stats();
  (*w)->Close();
  const uint64_t syncs = after.syncs - before.syncs;
  const uint64_t n = done.load();
  MutexLock lock(&mu);
  std::printf("%-22s %12.0f %10.0f %8.1f %9.1f %9.1f%s\n", absl::StrCat("log_sync=", policy.ToString()).c_str(),
              n / s, syncs / s, syncs == 0 ? 0.0 : static_cast<double>(n) / syncs, lat.PercentileUs(50),
              lat.PercentileUs(99), failed.load() > 0 ? absl::StrCat("  (", failed.load(), " failed)").c_str() : "");
}

int Main() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem();
  if (absl::Status s = fs->CreateDir(dir); !s.ok()) {
    std::fprintf(stderr, "log_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  const std::string path = absl::StrCat(dir, "/bench-", ::getpid(), ".log");
  const std::string payload(static_cast<size_t>(absl::GetFlag(FLAGS_bytes)), 'p');
  std::printf("durable log in %s: %d threads x %d records in flight, %d-byte records, %.1f s each\n", dir.c_str(),
              absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_inflight), absl::GetFlag(FLAGS_bytes),
              absl::GetFlag(FLAGS_seconds));
  std::printf("%-22s %12s %10s %8s %9s %9s\n", "", "records/s", "syncs/s", "per sync", "p50 us", "p99 us");
  RunRawBaseline(*fs, path, payload, absl::GetFlag(FLAGS_seconds));
  for (const std::string& p : absl::GetFlag(FLAGS_log_sync)) {
    absl::StatusOr<SyncPolicy> policy = SyncPolicy::Parse(p);
    if (!policy.ok()) {
      std::fprintf(stderr, "log_bench: %s\n", policy.status().ToString().c_str());
      return 2;
    }
    RunPolicy(*fs, path, payload, *policy);
  }
  std::filesystem::remove(path);
  return 0;
}

}  // namespace
}  // namespace farm::storage

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "Group-commit throughput and latency of the durable log on this disk.");
  return farm::storage::Main();
}
