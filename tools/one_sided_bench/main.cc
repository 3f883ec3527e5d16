// one_sided_bench: the latency of the raw facet's one-sided ops (farm/api/one_sided.h)
// next to a lock-free read and a transaction's commit, on an in-process 3-node cluster
// per fabric backend (--backends). The objects live on node 1; each operation runs
// --ops times, one at a time, from node 1's worker thread (local: this thread executes
// the op on its own memory) and from node 2's (remote: one fabric op; a transaction's
// commit is shipped to node 1 as a single-machine commit, replicated to the backups).
//
//   build/tools/one_sided_bench/one_sided_bench
//   one_sided_bench --backends=tcp --ops=50000 --size=256 --replication=1
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/in_process_cluster.h"
#include "farm/api/one_sided.h"
#include "farm/api/sync.h"
#include "farm/base/command_line.h"
#include "tools/common/latency.h"

ABSL_FLAG(std::vector<std::string>, backends, (std::vector<std::string>{"shm", "tcp"}),
          "fabric backends to measure (shm, tcp)");
ABSL_FLAG(int, ops, 20000, "operations per measurement");
ABSL_FLAG(uint32_t, size, 64, "bytes of the objects, and of each READ and WRITE");
ABSL_FLAG(uint32_t, replication, 3, "replicas per region (a commit's backups: r - 1)");

namespace farm::bench {
namespace {

enum class Op { kRead8, kRead, kWrite, kCas, kFetchAdd, kLockFreeRead, kTxCommit };
constexpr Op kOps[] = {Op::kRead8, Op::kRead, Op::kWrite, Op::kCas, Op::kFetchAdd, Op::kLockFreeRead, Op::kTxCommit};

std::string OpName(Op op, uint32_t size) {
  switch (op) {
    case Op::kRead8: return "rawRead 8 B";
    case Op::kRead: return absl::StrFormat("rawRead %d B", size);
    case Op::kWrite: return absl::StrFormat("rawWrite %d B", size);
    case Op::kCas: return "rawCas64";
    case Op::kFetchAdd: return "rawFetchAdd64";
    case Op::kLockFreeRead: return absl::StrFormat("lockFreeRead %d B", size);
    case Op::kTxCommit: return absl::StrFormat("tx read+write+commit %d B", size);
  }
  return "?";
}

struct Objects {
  RawPtr raw;
  FatPtr tx;
};

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

Task<absl::Status> Create(Context& ctx, uint32_t size, Objects* out) {
  absl::StatusOr<RawPtr> raw = co_await RawAlloc(ctx, size);
  if (!raw.ok()) co_return raw.status();
  out->raw = *raw;
  TxHandle tx = txCreate(ctx);
  absl::StatusOr<ObjBuf*> o = co_await TxAlloc(*tx, size);
  if (!o.ok()) co_return o.status();
  out->tx = (*o)->ptr();
  co_return co_await TxCommit(*tx);
}

Task<absl::Status> Once(Context& ctx, Op op, const Objects& objects, uint64_t i) {
  const uint32_t size = objects.raw.size;
  switch (op) {
    case Op::kRead8:
      co_return (co_await RawRead(ctx, objects.raw, 0, 8)).status();
    case Op::kRead:
      co_return (co_await RawRead(ctx, objects.raw, 0, size)).status();
    case Op::kWrite: {
      std::string bytes(size, static_cast<char>(i));
      co_return co_await RawWrite(ctx, objects.raw, 0, bytes);
    }
    case Op::kCas:
      co_return (co_await RawCas64(ctx, objects.raw, 0, i, i + 1)).status();
    case Op::kFetchAdd:
      co_return (co_await RawFetchAdd64(ctx, objects.raw, 8, 1)).status();
    case Op::kLockFreeRead: {
      LockFreeOp lf = lockFreeStart(ctx);
      absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(lf, objects.tx);
      lockFreeEnd(lf);
      co_return copy.status();
    }
    case Op::kTxCommit:
      for (;;) {
        TxHandle tx = txCreate(ctx);
        absl::StatusOr<ObjBuf*> o = co_await TxRead(*tx, objects.tx);
        if (!o.ok()) co_return o.status();
        (*o)->data()[0] = static_cast<char>(i);
        if (absl::Status s = txWrite(*tx, *o); !s.ok()) co_return s;
        absl::Status s = co_await TxCommit(*tx);
        if (!absl::IsAborted(s)) co_return s;
      }
  }
  co_return absl::InternalError("unknown op");
}

Task<absl::Status> Measure(Context& ctx, Op op, Objects objects, int ops, LatencySamples* samples) {
  if (op == Op::kCas) {
    // The word counts up from 0: each CAS succeeds.
    absl::Status s = co_await RawWrite(ctx, objects.raw, 0, std::string(8, '\0'));
    if (!s.ok()) co_return s;
  }
  for (int i = 0; i < ops; ++i) {
    const uint64_t start = NowNs();
    absl::Status s = co_await Once(ctx, op, objects, static_cast<uint64_t>(i));
    if (!s.ok()) co_return s;
    samples->Add(NowNs() - start);
  }
  co_return absl::OkStatus();
}

// Runs the task `make(ctx)` on `host`'s worker thread 0 and waits for it.
template <typename Make>
absl::Status RunTask(Host& host, Make make) {
  Notification done;
  absl::Status result;
  host.context(0).Post([&] {
    Spawn(make(host.context(0)), [&](absl::Status s) {
      result = s;
      done.Notify();
    });
  });
  done.WaitForNotification();
  return result;
}

int Main() {
  const uint32_t size = absl::GetFlag(FLAGS_size);
  const int ops = absl::GetFlag(FLAGS_ops);
  if (size < 16) {
    std::fprintf(stderr, "--size must be at least 16\n");
    return 2;
  }
  std::printf("%-8s %-7s %-30s %10s %10s %10s %12s\n", "backend", "from", "operation", "p50 us", "p99 us", "mean us",
              "ops/s");
  for (const std::string& backend : absl::GetFlag(FLAGS_backends)) {
    InProcessClusterOptions o;
    o.backend = backend;
    o.nodes = 3;
    o.threads = 1;
    o.replication = absl::GetFlag(FLAGS_replication);
    o.dir = absl::StrFormat("/tmp/farm-one-sided-bench-%d", ::getpid());
    absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Start(o);
    if (!cluster.ok()) {
      std::fprintf(stderr, "%s: %s\n", backend.c_str(), cluster.status().ToString().c_str());
      return 1;
    }
    Objects objects;
    if (absl::Status s = RunTask((*cluster)->host(1), [&](Context& ctx) { return Create(ctx, size, &objects); });
        !s.ok()) {
      std::fprintf(stderr, "%s: creating the objects: %s\n", backend.c_str(), s.ToString().c_str());
      return 1;
    }
    for (NodeId from : {NodeId{1}, NodeId{2}}) {
      for (Op op : kOps) {
        LatencySamples samples(static_cast<size_t>(ops));
        // A short warm-up (capabilities, validations, connections), then the run.
        for (int n : {ops / 10 + 1, ops}) {
          samples.Clear();
          const uint64_t start = NowNs();
          absl::Status s = RunTask((*cluster)->host(from), [&](Context& ctx) {
            return Measure(ctx, op, objects, n, &samples);
          });
          if (!s.ok()) {
            std::fprintf(stderr, "%s %s: %s\n", backend.c_str(), OpName(op, size).c_str(), s.ToString().c_str());
            return 1;
          }
          if (n != ops) continue;
          const double seconds = static_cast<double>(NowNs() - start) / 1e9;
          std::printf("%-8s %-7s %-30s %10.2f %10.2f %10.2f %12.0f\n", backend.c_str(),
                      from == 1 ? "local" : "remote", OpName(op, size).c_str(), samples.PercentileUs(50),
                      samples.PercentileUs(99), samples.MeanUs(), ops / seconds);
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace farm::bench

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv,
                         "latency of one-sided READ/WRITE/CAS/FETCH_ADD (farm/api/one_sided.h) next to a lock-free "
                         "read and a transaction's commit, local and remote, per fabric backend");
  return farm::bench::Main();
}
