// failover_bench: what a node crash costs a running cluster — the time from SIGKILL to
// the first commit on a region the dead node was primary of, the time until throughput
// is back to 90% of what it was, how fast the lost copies are re-made and what that does
// to the latency of the transactions running meanwhile; and a plot of commits per
// 100 ms across the kill.
//
// It starts a cluster of farm_node processes with deploy/local-cluster (ZooKeeper and
// --nodes nodes, --session_timeout_ms), joins it as a compute-only member, allocates
// accounts (and --fill_mb of filler objects per node, so that the regions to re-copy
// hold data), runs bank transfers (two random accounts, so mostly distributed
// transactions; every error retried) from --chains concurrent clients, SIGKILLs node
// --victim after --before_s, and keeps going for --after_s. Run from the repository root:
//
//   build/tools/failover_bench/failover_bench --nodes=4 --replication=3 --out=docs/failover
//
// The figures go to stdout; --out receives failover.csv (per 100 ms: commits, commits
// on the victim's regions, p99 latency), failover.gp and, with gnuplot installed,
// failover.png.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/base/command_line.h"
#include "farm/base/mutex.h"
#include "tools/common/compute_member.h"
#include "tools/common/subprocess.h"

ABSL_FLAG(int, nodes, 4, "farm_node processes");
ABSL_FLAG(int, replication, 3, "copies of each region (r)");
ABSL_FLAG(std::string, fabric, "shm", "fabric of the nodes and of this member: shm or tcp");
ABSL_FLAG(int, session_timeout_ms, 1000, "the nodes' ZooKeeper session timeout");
ABSL_FLAG(int, node_threads, 1, "worker threads per node");
ABSL_FLAG(int, region_mb, 64, "region size of the nodes");
ABSL_FLAG(int, fill_mb, 16, "filler objects allocated on each node before the run (what re-replication copies)");
ABSL_FLAG(int, accounts_per_node, 64, "bank accounts on each node");
ABSL_FLAG(int, chains, 8, "concurrent transfer clients (split over this member's 2 threads)");
ABSL_FLAG(int, victim, 2, "the node SIGKILLed");
ABSL_FLAG(double, before_s, 4.0, "seconds of load before the kill");
ABSL_FLAG(double, after_s, 8.0, "seconds of load after the kill");
ABSL_FLAG(int, zk_port, 2281, "ZooKeeper client port of the cluster started");
ABSL_FLAG(std::string, dir, "/tmp/farm-failover-bench", "run directory of the cluster");
ABSL_FLAG(std::string, out, "", "directory for failover.csv, failover.gp and failover.png (none: no files)");
ABSL_FLAG(std::string, build_dir, "build", "where farm_node was built (deploy/local-cluster --build-dir)");

namespace farm::bench {
namespace {

constexpr int kMemberThreads = 2;
constexpr int64_t kBucketNs = 100'000'000;  // 100 ms
constexpr uint32_t kFillObjectBytes = 16 << 10;

int64_t NowNs() { return absl::GetCurrentTimeNanos(); }

// One committed transfer.
struct Commit {
  int64_t at_ns;
  int64_t latency_ns;
  bool victim_region;  // it wrote an account whose region the victim was primary of
};

struct Account {
  FatPtr ptr;
  NodeId primary;  // at the start
};

absl::Status RunLocalCluster(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "bash", "deploy/local-cluster"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<Subprocess> p = Subprocess::Spawn(argv);
  if (!p.ok()) return p.status();
  absl::StatusOr<int> code = p->Wait(absl::Minutes(2));
  if (!code.ok()) return code.status();
  if (*code != 0) return absl::InternalError(absl::StrCat("deploy/local-cluster ", args.front(), " exited with ", *code));
  return absl::OkStatus();
}

// Runs fn(ctx, finish) on the member's thread `t` and waits for finish(status).
absl::Status OnThread(Host& host, size_t t,
                      absl::AnyInvocable<void(Context&, absl::AnyInvocable<void(absl::Status)>)> fn) {
  auto done = std::make_shared<Notification>();
  auto result = std::make_shared<absl::Status>();
  RunOnThread(host, t, [&fn, done, result](Context& ctx) {
    fn(ctx, [done, result](absl::Status s) {
      *result = std::move(s);
      done->Notify();
    });
  });
  done->WaitForNotification();
  return *result;
}

// Allocates `count` objects of `bytes` near `hint`, a few per transaction, retrying
// aborts; their pointers.
absl::StatusOr<std::vector<FatPtr>> Allocate(Host& host, Addr hint, uint32_t bytes, int count, int64_t fill) {
  std::vector<FatPtr> out;
  // A commit's messages carry its writes: at most ~48 KiB of them per transaction.
  const int per_tx = std::clamp(static_cast<int>((48u << 10) / bytes), 1, 16);
  while (static_cast<int>(out.size()) < count) {
    const int n = std::min(per_tx, count - static_cast<int>(out.size()));
    auto made = std::make_shared<std::vector<FatPtr>>();
    absl::Status s = OnThread(host, 0, [&](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      auto left = std::make_shared<int>(n);
      auto failed = std::make_shared<absl::Status>();
      auto objects = std::make_shared<std::vector<ObjBuf*>>();
      auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
      for (int i = 0; i < n; ++i) {
        txAlloc(*tx, bytes, hint, [=, finish = shared_finish](absl::StatusOr<ObjBuf*> o) mutable {
          if (o.ok()) {
            std::memcpy((*o)->data().data(), &fill, sizeof(fill));
            failed->Update(txWrite(*tx, *o));
            objects->push_back(*o);
          } else {
            failed->Update(o.status());
          }
          if (--*left > 0) return;
          if (!failed->ok()) {
            txAbort(*tx);
            return (*finish)(*failed);
          }
          txCommit(*tx, [tx, objects, made, finish](absl::Status s) mutable {
            if (s.ok()) {
              for (ObjBuf* o : *objects) made->push_back(o->ptr());
            }
            (*finish)(s);
          });
        });
      }
    });
    if (absl::IsAborted(s)) continue;
    if (!s.ok()) return s;
    out.insert(out.end(), made->begin(), made->end());
  }
  return out;
}

// The transfer clients: each keeps one transfer in flight, on the member's threads.
class Load {
 public:
  Load(Host& host, std::vector<Account> accounts, NodeId victim)
      : host_(host), accounts_(std::move(accounts)), victim_(victim), per_thread_(kMemberThreads) {}

  void Start(int chains) {
    for (int c = 0; c < chains; ++c) {
      const size_t t = static_cast<size_t>(c % kMemberThreads);
      RunOnThread(host_, t, [this, t](Context& ctx) { Next(ctx, t); });
    }
  }

  // Stops starting transfers and waits until those in flight ended.
  void Stop() {
    stopping_.store(true);
    while (running_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  std::vector<Commit> Commits() const {
    std::vector<Commit> all;
    for (const Thread& t : per_thread_) all.insert(all.end(), t.commits.begin(), t.commits.end());
    std::sort(all.begin(), all.end(), [](const Commit& a, const Commit& b) { return a.at_ns < b.at_ns; });
    return all;
  }
  uint64_t failures() const {
    uint64_t n = 0;
    for (const Thread& t : per_thread_) n += t.failures;
    return n;
  }

 private:
  struct Thread {
    std::vector<Commit> commits;  // this thread's only
    uint64_t failures = 0;
    absl::BitGen random;
  };

  void Next(Context& ctx, size_t t) {
    if (stopping_.load()) return;
    ++running_;
    Thread& me = per_thread_[t];
    const size_t a = absl::Uniform<size_t>(me.random, 0, accounts_.size());
    size_t b = absl::Uniform<size_t>(me.random, 0, accounts_.size() - 1);
    if (b >= a) ++b;
    const int64_t start = NowNs();
    const bool victim = accounts_[a].primary == victim_ || accounts_[b].primary == victim_;
    TxHandle tx = txCreate(ctx);
    auto objs = std::make_shared<std::vector<ObjBuf*>>(2, nullptr);
    auto left = std::make_shared<int>(2);
    auto failed = std::make_shared<absl::Status>();
    auto end = [this, &ctx, t, start, victim](absl::Status s) {
      Thread& me = per_thread_[t];
      if (s.ok()) {
        const int64_t now = NowNs();
        me.commits.push_back(Commit{now, now - start, victim});
        --running_;
        return Next(ctx, t);
      }
      ++me.failures;
      --running_;
      // The cluster may be reconfiguring: try again soon, never in a tight loop.
      ctx.RunAfter(absl::Milliseconds(2), [this, &ctx, t] { Next(ctx, t); });
    };
    for (int i = 0; i < 2; ++i) {
      txRead(*tx, accounts_[i == 0 ? a : b].ptr, [=](absl::StatusOr<ObjBuf*> o) mutable {
        if (o.ok()) {
          (*objs)[i] = *o;
        } else {
          failed->Update(o.status());
        }
        if (--*left > 0) return;
        if (!failed->ok()) {
          txAbort(*tx);
          return end(*failed);
        }
        for (int j = 0; j < 2; ++j) {
          int64_t balance = 0;
          std::memcpy(&balance, (*objs)[j]->data().data(), sizeof(balance));
          balance += j == 0 ? -1 : 1;
          std::memcpy((*objs)[j]->data().data(), &balance, sizeof(balance));
          failed->Update(txWrite(*tx, (*objs)[j]));
        }
        if (!failed->ok()) {
          txAbort(*tx);
          return end(*failed);
        }
        txCommit(*tx, [tx, end](absl::Status s) mutable { end(s); });
      });
    }
  }

  Host& host_;
  const std::vector<Account> accounts_;
  const NodeId victim_;
  std::vector<Thread> per_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> running_{0};
};

int64_t Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// The re-replication the survivors logged: "copy sent to node N: B bytes in S s".
struct CopyFigures {
  uint64_t bytes = 0;
  double seconds = 0;
  int copies = 0;
};
CopyFigures ReadCopies(const std::string& dir, int nodes) {
  CopyFigures f;
  const std::regex line("copy sent to node \\d+: (\\d+) bytes in ([0-9.]+) s");
  for (int n = 1; n <= nodes; ++n) {
    std::ifstream in(absl::StrCat(dir, "/logs/node-", n, ".log"));
    std::string l;
    std::smatch m;
    while (std::getline(in, l)) {
      if (!std::regex_search(l, m, line)) continue;
      f.bytes += std::stoull(m[1]);
      f.seconds += std::stod(m[2]);
      ++f.copies;
    }
  }
  return f;
}

int Main() {
  const int nodes = absl::GetFlag(FLAGS_nodes);
  const NodeId victim = static_cast<NodeId>(absl::GetFlag(FLAGS_victim));
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const std::string port = absl::StrCat(absl::GetFlag(FLAGS_zk_port));
  auto fail = [&](const std::string& what, const absl::Status& s) {
    std::fprintf(stderr, "failover_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
    (void)RunLocalCluster({"stop", "--dir", dir});
    return 1;
  };
  if (absl::Status s = RunLocalCluster(
          {"start", "--fresh", "--nodes", absl::StrCat(nodes), "--dir", dir, "--zk-port", port, "--fabric",
           absl::GetFlag(FLAGS_fabric), "--session-timeout", absl::StrCat(absl::GetFlag(FLAGS_session_timeout_ms)),
           "--build-dir", absl::GetFlag(FLAGS_build_dir), "--", absl::StrCat("--threads=", absl::GetFlag(FLAGS_node_threads)),
           absl::StrCat("--region_mb=", absl::GetFlag(FLAGS_region_mb)),
           absl::StrCat("--replication=", absl::GetFlag(FLAGS_replication)), "--log_sync=always"});
      !s.ok()) {
    return fail("starting the cluster", s);
  }
  tools::ComputeMemberOptions mo;
  mo.zookeeper = absl::StrCat("127.0.0.1:", port);
  mo.secret_file = dir + "/secret";
  mo.fabric = absl::GetFlag(FLAGS_fabric);
  mo.threads = kMemberThreads;
  absl::StatusOr<std::unique_ptr<tools::ComputeMember>> member = tools::ComputeMember::Join(mo);
  if (!member.ok()) return fail("joining", member.status());
  absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> regions = (*member)->RegionsByPrimary();
  if (!regions.ok()) return fail("regions", regions.status());
  std::vector<Account> accounts;
  for (const auto& [primary, ids] : *regions) {
    if (ids.empty()) continue;
    absl::StatusOr<std::vector<FatPtr>> made =
        Allocate((*member)->host(), Addr(ids.front(), 0), 16, absl::GetFlag(FLAGS_accounts_per_node), 1000);
    if (!made.ok()) return fail("accounts", made.status());
    for (const FatPtr& p : *made) accounts.push_back(Account{p, primary});
    const int fill = static_cast<int>((int64_t{absl::GetFlag(FLAGS_fill_mb)} << 20) / kFillObjectBytes);
    absl::StatusOr<std::vector<FatPtr>> filler =
        Allocate((*member)->host(), Addr(ids.front(), 0), kFillObjectBytes, fill, 7);
    if (!filler.ok()) return fail("filler", filler.status());
  }
  std::printf("cluster: %d nodes, r=%d, %s, session timeout %d ms; %zu accounts, %d MB filler per node, %d clients\n",
              nodes, absl::GetFlag(FLAGS_replication), absl::GetFlag(FLAGS_fabric).c_str(),
              absl::GetFlag(FLAGS_session_timeout_ms), accounts.size(), absl::GetFlag(FLAGS_fill_mb),
              absl::GetFlag(FLAGS_chains));

  Load load((*member)->host(), accounts, victim);
  const int64_t begin = NowNs();
  load.Start(absl::GetFlag(FLAGS_chains));
  absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_before_s)));
  // SIGKILL straight from here (deploy/local-cluster kill would add a shell's start-up
  // to the figures): the pid file the script wrote.
  pid_t victim_pid = 0;
  {
    std::ifstream pid_file(absl::StrCat(dir, "/pids/node-", victim, ".pid"));
    pid_file >> victim_pid;
  }
  if (victim_pid <= 0 || ::kill(victim_pid, SIGKILL) != 0) {
    return fail("kill", absl::NotFoundError(absl::StrCat("no running node ", victim, " (pid file in ", dir, "/pids)")));
  }
  const int64_t killed = NowNs();
  absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_after_s)));
  load.Stop();
  const int64_t end = NowNs();
  const std::vector<Commit> commits = load.Commits();
  const CopyFigures copies = ReadCopies(dir, nodes);
  (*member)->Leave();
  (void)RunLocalCluster({"stop", "--dir", dir});

  // Per 100 ms bucket, from the start.
  const size_t buckets = static_cast<size_t>((end - begin) / kBucketNs) + 1;
  std::vector<int64_t> per_bucket(buckets, 0), victim_bucket(buckets, 0);
  std::vector<std::vector<int64_t>> latencies(buckets);
  for (const Commit& c : commits) {
    const size_t b = static_cast<size_t>((c.at_ns - begin) / kBucketNs);
    ++per_bucket[b];
    victim_bucket[b] += c.victim_region;
    latencies[b].push_back(c.latency_ns);
  }
  // Throughput before: the buckets after the first second up to the kill.
  const size_t warm = 10, kill_bucket = static_cast<size_t>((killed - begin) / kBucketNs);
  double baseline = 0;
  for (size_t b = warm; b < kill_bucket; ++b) baseline += static_cast<double>(per_bucket[b]);
  baseline /= static_cast<double>(std::max<size_t>(1, kill_bucket - warm));
  int64_t first_any = -1, first_victim = -1;
  for (const Commit& c : commits) {
    if (c.at_ns <= killed) continue;
    if (first_any < 0) first_any = c.at_ns - killed;
    // The first one that started after the kill: a commit on the victim's regions that
    // began before it may have finished on the old primary.
    if (c.victim_region && c.at_ns - c.latency_ns > killed) {
      first_victim = c.at_ns - killed;
      break;
    }
  }
  int64_t back_to_90 = -1;
  for (size_t b = kill_bucket + 1; b < buckets; ++b) {
    if (static_cast<double>(per_bucket[b]) >= 0.9 * baseline) {
      back_to_90 = static_cast<int64_t>(b + 1) * kBucketNs - (killed - begin);
      break;
    }
  }
  // Latency before the kill (after the first second), in the second after the first
  // commit on the victim's regions — while its regions are re-copied (the copies take
  // well under a second here: see the re-replication line) — and after that.
  std::vector<int64_t> before, during, after;
  const int64_t recovered = first_victim >= 0 ? killed + first_victim : end;
  for (const Commit& c : commits) {
    if (c.at_ns < killed && c.at_ns - begin > int64_t{1'000'000'000}) before.push_back(c.latency_ns);
    if (c.at_ns >= recovered && c.at_ns < recovered + int64_t{1'000'000'000}) during.push_back(c.latency_ns);
    if (c.at_ns >= recovered + int64_t{1'000'000'000}) after.push_back(c.latency_ns);
  }
  auto ms = [](int64_t ns) { return ns < 0 ? -1.0 : static_cast<double>(ns) / 1e6; };
  std::printf("throughput before the kill: %.0f commits/s (%zu failed attempts in the run)\n", baseline * 10,
              static_cast<size_t>(load.failures()));
  std::printf("SIGKILL -> first commit anywhere:                 %8.1f ms\n", ms(first_any));
  std::printf("SIGKILL -> first commit on the victim's regions:   %8.1f ms\n", ms(first_victim));
  std::printf("SIGKILL -> throughput back to 90%% (100 ms buckets): %8.1f ms\n", ms(back_to_90));
  std::printf("re-replication: %d copies, %.1f MB in %.2f s of copying (%.1f MB/s)\n", copies.copies,
              static_cast<double>(copies.bytes) / 1e6, copies.seconds,
              copies.seconds > 0 ? static_cast<double>(copies.bytes) / 1e6 / copies.seconds : 0.0);
  std::printf("transfer latency p50/p99 (ms): before %.2f/%.2f, re-replication second %.2f/%.2f, after %.2f/%.2f\n",
              ms(Percentile(before, 0.5)), ms(Percentile(before, 0.99)), ms(Percentile(during, 0.5)),
              ms(Percentile(during, 0.99)), ms(Percentile(after, 0.5)), ms(Percentile(after, 0.99)));

  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) return 0;
  std::filesystem::create_directories(out);
  {
    std::ofstream csv(out + "/failover.csv");
    csv << "# t_ms (from the kill), commits per 100 ms, of them on the victim's regions, p99 latency ms\n";
    for (size_t b = 0; b < buckets; ++b) {
      csv << (static_cast<int64_t>(b) * kBucketNs - (killed - begin)) / 1'000'000 << "," << per_bucket[b] << ","
          << victim_bucket[b] << "," << absl::StrFormat("%.2f", ms(Percentile(latencies[b], 0.99))) << "\n";
    }
  }
  {
    std::ofstream gp(out + "/failover.gp");
    gp << "set terminal pngcairo size 900,450\n"
          "set output 'failover.png'\n"
          "set datafile separator ','\n"
          "set title 'Commits per 100 ms across a SIGKILL of one node (t = 0)'\n"
          "set xlabel 'ms from the kill'\nset ylabel 'commits per 100 ms'\n"
          "set y2label 'p99 latency (ms)'\nset y2tics\nset ytics nomirror\n"
          "set arrow from 0, graph 0 to 0, graph 1 nohead dashtype 2\n"
          "plot 'failover.csv' using 1:2 with steps title 'all commits', \\\n"
          "     'failover.csv' using 1:3 with steps title \"on the dead node's regions\", \\\n"
          "     'failover.csv' using 1:4 axes x1y2 with lines title 'p99 latency'\n";
  }
  if (std::system(absl::StrCat("cd '", out, "' && gnuplot failover.gp 2>/dev/null").c_str()) != 0) {
    std::printf("(gnuplot did not run: %s/failover.gp is there to plot by hand)\n", out.c_str());
  }
  std::printf("plot data: %s/failover.csv, %s/failover.png\n", out.c_str(), out.c_str());
  return 0;
}

}  // namespace
}  // namespace farm::bench

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "failover_bench: the cost of a node crash under load");
  return farm::bench::Main();
}
