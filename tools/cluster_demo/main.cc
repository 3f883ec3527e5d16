// cluster_demo: a local cluster of FaRM node processes talking over ring buffers.
//
// Starts --nodes node processes on one backend, links every node with every other
// (each worker thread gets a ring on each peer), then has every worker thread keep
// --window RPCs in flight to random peers for --seconds, and prints what each node
// did. The README's quick start runs it.
//
//   cluster_demo [--nodes=3] [--threads=2] [--backend=shm|tcp] [--seconds=3]
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "farm/base/command_line.h"
#include "farm/base/mutex.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "tools/common/latency.h"
#include "tools/common/subprocess.h"

ABSL_FLAG(int, nodes, 3, "node processes to start");
ABSL_FLAG(int, threads, 2, "worker threads per node");
ABSL_FLAG(std::string, backend, "shm", "fabric backend: shm or tcp");
ABSL_FLAG(double, seconds, 3, "how long the workload runs");
ABSL_FLAG(int, window, 8, "RPCs each worker thread keeps in flight");
ABSL_FLAG(int, payload, 64, "request and response payload bytes");
ABSL_FLAG(int, node_id, 0, "internal: run as this node");

namespace farm::demo {
namespace {

using Clock = std::chrono::steady_clock;
constexpr MsgId kEcho = kBenchmarkMsgIds[1];

std::string ReadStdinLine() {
  char buf[4096];
  return std::fgets(buf, sizeof(buf), stdin) == nullptr ? "" : std::string(buf, std::strcspn(buf, "\n"));
}

// One worker thread's share of the workload: `window` chains of calls; each
// continuation records the latency and issues the next call, until the deadline.
struct Worker {
  MsgThread* thread = nullptr;
  std::vector<NodeId> peers;
  std::string payload;
  Clock::time_point end;
  std::mt19937 rng{std::random_device{}()};
  LatencySamples latency{1 << 16};
  uint64_t calls = 0, errors = 0;
  int active = 0;
  Notification done;

  void Issue() {
    const NodeId peer = peers[rng() % peers.size()];
    const auto t0 = Clock::now();
    absl::Status s = thread->Call(peer, kEcho, payload,
                                  [this, t0](const absl::Status& st, absl::string_view reply) {
                                    const auto now = Clock::now();
                                    if (st.ok() && reply.size() == payload.size()) {
                                      ++calls;
                                      latency.Add(static_cast<uint64_t>((now - t0).count()));
                                    } else {
                                      ++errors;
                                    }
                                    Next(now);
                                  });
    if (!s.ok()) {
      ++errors;
      Next(Clock::now());
    }
  }
  void Next(Clock::time_point now) {
    if (now < end) {
      Issue();
    } else if (--active == 0) {
      done.Notify();
    }
  }
};

int RunNode(int id) {
  auto fail = [id](const absl::Status& s) {
    std::printf("ERROR node %d: %s\n", id, s.ToString().c_str());
    return 1;
  };
  const std::string backend = absl::GetFlag(FLAGS_backend);
  FabricOptions fo;
  fo.backend = backend;
  fo.cluster_secret = "farm-cluster-demo-secret";
  fo.listen_address = backend == "shm" ? absl::StrCat("/tmp/farm-demo-", ::getppid(), "-", id, ".sock")
                                       : "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Fabric>> fabric = Fabric::Create(fo);
  if (!fabric.ok()) return fail(fabric.status());
  std::vector<std::unique_ptr<LoopThread>> loops;
  std::vector<EventLoop*> loop_ptrs;
  for (int t = 0; t < absl::GetFlag(FLAGS_threads); ++t) {
    absl::StatusOr<std::unique_ptr<Doorbell>> bell = (*fabric)->CreateDoorbell();
    if (!bell.ok()) return fail(bell.status());
    absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(std::move(*bell));
    if (!loop.ok()) return fail(loop.status());
    loops.push_back(std::make_unique<LoopThread>(std::move(*loop)));
    loop_ptrs.push_back(&loops.back()->loop());
  }
  MessengerOptions mo;
  mo.node_id = static_cast<NodeId>(id);
  absl::StatusOr<std::unique_ptr<Messenger>> messenger =
      Messenger::Create(fabric->get(), loop_ptrs, mo);
  if (!messenger.ok()) return fail(messenger.status());
  Messenger& m = **messenger;
  (void)m.RegisterHandler(kEcho, [](MsgThread& t, const Message& msg) {
    (void)t.Reply(msg.reply_to, msg.payload);
  });
  if (absl::Status s = m.Start(); !s.ok()) return fail(s);
  std::printf("READY %s\n", (*fabric)->locator().c_str());
  std::fflush(stdout);

  // "PEERS 1=shm:/..,2=..": connect to every other node.
  std::vector<NodeId> peers;
  const std::string line = ReadStdinLine();
  for (absl::string_view entry : absl::StrSplit(absl::StripPrefix(line, "PEERS "), ',')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    uint32_t peer = 0;
    if (!absl::SimpleAtoi(kv.first, &peer) || peer == static_cast<uint32_t>(id)) continue;
    peers.push_back(peer);
    if (absl::Status s = m.Connect(peer, kv.second); !s.ok()) return fail(s);
  }
  for (NodeId peer : peers) {
    while (!m.IsConnected(peer)) absl::SleepFor(absl::Milliseconds(1));
  }
  std::printf("LINKED\n");
  std::fflush(stdout);
  if (ReadStdinLine() != "GO") return 0;

  std::vector<std::unique_ptr<Worker>> workers;
  const auto end = Clock::now() + std::chrono::milliseconds(
                                      static_cast<int64_t>(absl::GetFlag(FLAGS_seconds) * 1000));
  for (size_t t = 0; t < loops.size(); ++t) {
    auto w = std::make_unique<Worker>();
    w->thread = &m.thread(t);
    w->peers = peers;
    w->payload.assign(absl::GetFlag(FLAGS_payload), 'x');
    w->end = end;
    Worker* raw = w.get();
    const int window = absl::GetFlag(FLAGS_window);
    loops[t]->loop().Post([raw, window] {
      raw->active = window;
      for (int i = 0; i < window; ++i) raw->Issue();
    });
    workers.push_back(std::move(w));
  }
  uint64_t calls = 0, errors = 0;
  for (auto& w : workers) {
    w->done.WaitForNotification();
    calls += w->calls;
    errors += w->errors;
  }
  // The slowest thread's percentiles stand for the node.
  double p50 = 0, p99 = 0;
  for (auto& w : workers) {
    p50 = std::max(p50, w->latency.PercentileUs(50));
    p99 = std::max(p99, w->latency.PercentileUs(99));
  }
  std::printf("RESULT node=%d calls=%lu errors=%lu p50_us=%.1f p99_us=%.1f\n", id, calls, errors,
              p50, p99);
  std::fflush(stdout);
  ReadStdinLine();  // wait for the parent to close
  messenger->reset();
  return 0;
}

int RunCluster() {
  const int n = absl::GetFlag(FLAGS_nodes);
  if (n < 2 || n > 64) {
    std::fprintf(stderr, "--nodes must be 2..64\n");
    return 2;
  }
  std::printf("Starting %d FaRM node processes (%s fabric, %d worker threads each)...\n", n,
              absl::GetFlag(FLAGS_backend).c_str(), absl::GetFlag(FLAGS_threads));
  std::vector<Subprocess> nodes;
  std::vector<std::string> members;
  for (int id = 1; id <= n; ++id) {
    absl::StatusOr<Subprocess> p = Subprocess::Spawn(
        {"/proc/self/exe", absl::StrCat("--node_id=", id),
         absl::StrCat("--backend=", absl::GetFlag(FLAGS_backend)),
         absl::StrCat("--threads=", absl::GetFlag(FLAGS_threads)),
         absl::StrCat("--seconds=", absl::GetFlag(FLAGS_seconds)),
         absl::StrCat("--window=", absl::GetFlag(FLAGS_window)),
         absl::StrCat("--payload=", absl::GetFlag(FLAGS_payload))});
    if (!p.ok()) return 1;
    absl::StatusOr<std::string> ready = p->ReadLineStartingWith("READY", absl::Seconds(30));
    if (!ready.ok()) {
      std::fprintf(stderr, "node %d did not start: %s\n", id, ready.status().ToString().c_str());
      return 1;
    }
    members.push_back(absl::StrCat(id, "=", ready->substr(6)));
    std::printf("  node %d at %s\n", id, ready->substr(6).c_str());
    nodes.push_back(std::move(*p));
  }
  const std::string peers = absl::StrCat("PEERS ", absl::StrJoin(members, ","));
  for (Subprocess& p : nodes) (void)p.WriteLine(peers);
  for (Subprocess& p : nodes) {
    absl::StatusOr<std::string> linked = p.ReadLineStartingWith("LINKED", absl::Seconds(30));
    if (!linked.ok()) {
      std::fprintf(stderr, "a node failed to link: %s\n", linked.status().ToString().c_str());
      return 1;
    }
  }
  std::printf("All %d nodes linked all-to-all (%d rings per node). Running echo RPCs for %.1f s, "
              "%d in flight per thread, %d-byte payloads...\n",
              n, (n - 1) * absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_seconds),
              absl::GetFlag(FLAGS_window), absl::GetFlag(FLAGS_payload));
  for (Subprocess& p : nodes) (void)p.WriteLine("GO");
  uint64_t total = 0, errors = 0;
  std::printf("\n| node | RPCs completed | RPCs/s | errors | p50 µs | p99 µs |\n|---:|---:|---:|---:|---:|---:|\n");
  for (Subprocess& p : nodes) {
    absl::StatusOr<std::string> result =
        p.ReadLineStartingWith("RESULT", absl::Seconds(absl::GetFlag(FLAGS_seconds) + 30));
    if (!result.ok()) {
      std::fprintf(stderr, "a node did not report: %s\n", result.status().ToString().c_str());
      return 1;
    }
    std::map<std::string, std::string> f;
    for (absl::string_view kv : absl::StrSplit(result->substr(7), ' ')) {
      std::pair<std::string, std::string> p2 = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      f[p2.first] = p2.second;
    }
    uint64_t calls = 0, errs = 0;
    (void)absl::SimpleAtoi(f["calls"], &calls);
    (void)absl::SimpleAtoi(f["errors"], &errs);
    total += calls;
    errors += errs;
    std::printf("| %s | %lu | %.0f | %lu | %s | %s |\n", f["node"].c_str(), calls,
                calls / absl::GetFlag(FLAGS_seconds), errs, f["p50_us"].c_str(), f["p99_us"].c_str());
  }
  std::printf("\nCluster total: %lu RPCs in %.1f s = %.0f RPCs/s, %lu errors.\n", total,
              absl::GetFlag(FLAGS_seconds), total / absl::GetFlag(FLAGS_seconds), errors);
  for (Subprocess& p : nodes) (void)p.WriteLine("STOP");
  for (Subprocess& p : nodes) (void)p.Wait(absl::Seconds(20));
  return errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace farm::demo

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "Runs a local cluster of FaRM nodes exchanging ring-buffer RPCs.");
  if (const int id = absl::GetFlag(FLAGS_node_id); id > 0) return farm::demo::RunNode(id);
  return farm::demo::RunCluster();
}
