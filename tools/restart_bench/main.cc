// restart_bench: how long a node takes to come back on its data, by data size, and
// what the log costs per committed transaction.
//
// For each --data_mb: an in-process one-node cluster (r = 1, tcp, --log_sync for the
// fill) on a directory on this machine's disk writes that many MB of objects
// (--object_kb each, --per_tx per single-machine transaction), is stopped, and is started
// again on its data: the figure is the time from Start until the node serves the last
// object written (log read, parsed and replayed into the region, regions adopted by
// the allocator's scan). It also prints the data directory's bytes per payload byte
// (segments and checkpoint), and the log's bytes per transaction of a small-write
// workload (one 64-byte object per transaction). --checkpoint_mb as farm_node's: 0 keeps
// the whole log (restart replays all of it); with checkpoints, restart reads the last
// checkpoint and the log after it.
//
//   build/tools/restart_bench/restart_bench --data_mb=256,1024 --checkpoint_mb=0,256
//   --dir=build/restart-bench
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/farm.h"
#include "farm/api/in_process_cluster.h"
#include "farm/base/command_line.h"
#include "farm/base/mutex.h"

ABSL_FLAG(std::vector<std::string>, data_mb, (std::vector<std::string>{"256", "1024"}),
          "data sizes to restart");
ABSL_FLAG(uint32_t, object_kb, 16, "object payload size");
ABSL_FLAG(uint32_t, per_tx, 16, "objects allocated per transaction");
ABSL_FLAG(std::string, log_sync, "none",
          "the fill's --log_sync (the restart reads what was written)");
ABSL_FLAG(std::vector<std::string>, checkpoint_mb, (std::vector<std::string>{"0", "256"}),
          "checkpoint thresholds to compare (farm_node --checkpoint_mb; 0: no checkpoints)");
ABSL_FLAG(uint32_t, writes, 1,
          "times the data is written: the first allocates it, the others overwrite it in place "
          "(a steady workload: without checkpoints the log grows with every pass)");
ABSL_FLAG(std::string, dir, "/tmp/farm-restart-bench",
          "data directory (put it on the disk to measure)");

namespace farm::bench {
namespace {

// Runs fn(ctx, finish) on the host's thread 0 and waits for finish(status).
absl::Status OnThread(
    Host& host, absl::AnyInvocable<void(Context&, absl::AnyInvocable<void(absl::Status)>)> fn) {
  auto done = std::make_shared<Notification>();
  auto result = std::make_shared<absl::Status>();
  RunOnThread(host, 0, [&fn, done, result](Context& ctx) {
    fn(ctx, [done, result](absl::Status s) {
      *result = std::move(s);
      done->Notify();
    });
  });
  done->WaitForNotification();
  return *result;
}

// What both batch kinds share: each object's answer is counted; once all answered, the
// transaction commits (finish gets the commit's status), or aborts with the first error.
class BatchJoin : public std::enable_shared_from_this<BatchJoin> {
 public:
  BatchJoin(Context& ctx, size_t count, absl::AnyInvocable<void(absl::Status)> finish)
      : tx_(txCreate(ctx)), left_(count), finish_(std::move(finish)) {}
  Tx& tx() { return *tx_; }
  void Answered(const absl::Status& s) {
    failed_.Update(s);
    if (--left_ > 0) return;
    if (!failed_.ok()) {
      txAbort(*tx_);
      return finish_(failed_);
    }
    txCommit(*tx_, [self = shared_from_this()](absl::Status s) { self->finish_(s); });
  }

 private:
  TxHandle tx_;
  size_t left_;
  absl::Status failed_;
  absl::AnyInvocable<void(absl::Status)> finish_;
};

// One transaction overwriting `objects` with `fill`.
absl::Status OverwriteBatch(Host& host, std::vector<FatPtr> objects, char fill) {
  return OnThread(host, [objects = std::move(objects), fill](Context& ctx, auto finish) {
    auto join = std::make_shared<BatchJoin>(ctx, objects.size(), std::move(finish));
    for (const FatPtr& p : objects) {
      txRead(join->tx(), p, [join, fill](absl::StatusOr<ObjBuf*> o) {
        if (!o.ok()) return join->Answered(o.status());
        std::fill((*o)->data().begin(), (*o)->data().end(), fill);
        join->Answered(txWrite(join->tx(), *o));
      });
    }
  });
}

// One transaction allocating `count` objects of `bytes` filled with `fill`; their
// pointers appended to *made.
absl::Status AllocateBatch(Host& host, uint32_t count, uint32_t bytes, char fill,
                           std::vector<FatPtr>* made) {
  return OnThread(host, [count, bytes, fill, made](Context& ctx, auto finish) {
    auto join = std::make_shared<BatchJoin>(ctx, count, std::move(finish));
    for (uint32_t i = 0; i < count; ++i) {
      txAlloc(join->tx(), bytes, Addr(), [join, fill, made](absl::StatusOr<ObjBuf*> o) {
        if (!o.ok()) return join->Answered(o.status());
        std::fill((*o)->data().begin(), (*o)->data().end(), fill);
        made->push_back((*o)->ptr());
        join->Answered(absl::OkStatus());
      });
    }
  });
}

absl::Status ReadOne(Host& host, FatPtr p, char expect) {
  return OnThread(host, [p, expect](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
    txRead(*tx, p, [tx, expect, shared_finish](absl::StatusOr<ObjBuf*> o) mutable {
      if (!o.ok()) return (*shared_finish)(o.status());
      const bool right = !(*o)->data().empty() && (*o)->data()[0] == expect;
      txCommit(*tx, [tx, right, shared_finish](absl::Status s) mutable {
        (*shared_finish)(!s.ok() ? s
                         : right ? absl::OkStatus()
                                 : absl::DataLossError("wrong content after restart"));
      });
    });
  });
}

InProcessClusterOptions ClusterOptions(uint64_t data_bytes, bool keep, uint64_t checkpoint_bytes) {
  InProcessClusterOptions o;
  o.backend = "tcp";
  o.nodes = 1;
  o.replication = 1;
  o.threads = 1;
  o.region_bytes = 256u << 20;
  o.capacity_bytes = ((data_bytes * 9 / 8) / o.region_bytes + 2) * o.region_bytes;
  o.dir = absl::GetFlag(FLAGS_dir);
  o.log_sync = absl::GetFlag(FLAGS_log_sync);
  o.keep_data = keep;
  o.checkpoint_bytes = checkpoint_bytes;
  return o;
}

// The node's log segments and checkpoint.
uint64_t LogBytes() {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(absl::GetFlag(FLAGS_dir) + "/node-1", ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && (name.rfind("log", 0) == 0 || name.rfind("checkpoint", 0) == 0))
      total += e.file_size();
  }
  return total;
}

int Main() {
  const uint32_t object = absl::GetFlag(FLAGS_object_kb) << 10;
  const uint32_t per_tx = absl::GetFlag(FLAGS_per_tx);
  const uint32_t writes = std::max<uint32_t>(1, absl::GetFlag(FLAGS_writes));
  std::printf(
      "restart of a one-node cluster (r = 1) on its data: %u KiB objects, %u per transaction, "
      "written %u times with --log_sync=%s, in %s\n",
      object >> 10, per_tx, writes, absl::GetFlag(FLAGS_log_sync).c_str(),
      absl::GetFlag(FLAGS_dir).c_str());
  std::printf("%10s %14s %12s %14s %12s %16s %14s\n", "data MB", "checkpoint MB", "on disk MB",
              "transactions", "fill s", "disk B/payload B", "restart s");
  for (const std::string& ckpt_text : absl::GetFlag(FLAGS_checkpoint_mb)) {
    uint64_t checkpoint_mb = 0;
    if (!absl::SimpleAtoi(ckpt_text, &checkpoint_mb)) {
      std::fprintf(stderr, "restart_bench: --checkpoint_mb=%s\n", ckpt_text.c_str());
      return 2;
    }
    const uint64_t checkpoint_bytes = checkpoint_mb << 20;
    for (const std::string& text : absl::GetFlag(FLAGS_data_mb)) {
      uint64_t mb = 0;
      if (!absl::SimpleAtoi(text, &mb) || mb == 0) {
        std::fprintf(stderr, "restart_bench: --data_mb=%s\n", text.c_str());
        return 2;
      }
      const uint64_t bytes = mb << 20;
      const uint64_t batches = bytes / (uint64_t{object} * per_tx);
      const uint64_t transactions = batches * writes;
      std::vector<FatPtr> objects;
      std::filesystem::remove_all(absl::GetFlag(FLAGS_dir));
      const absl::Time fill_start = absl::Now();
      {
        // keep_data: the data stays for the restart.
        absl::StatusOr<std::unique_ptr<InProcessCluster>> c =
            InProcessCluster::Start(ClusterOptions(bytes, true, checkpoint_bytes));
        if (!c.ok()) {
          std::fprintf(stderr, "restart_bench: %s\n", c.status().ToString().c_str());
          return 1;
        }
        for (uint64_t t = 0; t < transactions; ++t) {
          const char fill = 'a' + t % 26;
          const uint64_t batch = t % batches;
          absl::Status s =
              t < batches
                  ? AllocateBatch((*c)->host(1), per_tx, object, fill, &objects)
                  : OverwriteBatch((*c)->host(1),
                                   std::vector<FatPtr>(objects.begin() + batch * per_tx,
                                                       objects.begin() + (batch + 1) * per_tx),
                                   fill);
          if (!s.ok()) {
            std::fprintf(stderr, "restart_bench: fill: %s\n", s.ToString().c_str());
            return 1;
          }
        }
      }
      const double fill_s = absl::ToDoubleSeconds(absl::Now() - fill_start);
      const uint64_t log_bytes = LogBytes();
      const absl::Time restart = absl::Now();
      absl::StatusOr<std::unique_ptr<InProcessCluster>> c =
          InProcessCluster::Start(ClusterOptions(bytes, true, checkpoint_bytes));
      if (!c.ok()) {
        std::fprintf(stderr, "restart_bench: restart: %s\n", c.status().ToString().c_str());
        return 1;
      }
      absl::Status read;
      while (!(read = ReadOne((*c)->host(1), objects.back(), 'a' + (transactions - 1) % 26)).ok() &&
             absl::Now() - restart < absl::Seconds(120)) {
        absl::SleepFor(absl::Milliseconds(1));
      }
      const double restart_s = absl::ToDoubleSeconds(absl::Now() - restart);
      if (!read.ok()) {
        std::fprintf(stderr, "restart_bench: after restart: %s\n", read.ToString().c_str());
        return 1;
      }
      std::printf("%10lu %14lu %12.1f %14lu %12.2f %16.3f %14.2f\n", static_cast<unsigned long>(mb),
                  static_cast<unsigned long>(checkpoint_mb), log_bytes / 1048576.0,
                  static_cast<unsigned long>(transactions), fill_s,
                  static_cast<double>(log_bytes) / bytes, restart_s);
      c->reset();
      std::filesystem::remove_all(absl::GetFlag(FLAGS_dir));
    }
  }
  // Bytes per transaction of small writes: one 64-byte object each.
  {
    std::filesystem::remove_all(absl::GetFlag(FLAGS_dir));
    absl::StatusOr<std::unique_ptr<InProcessCluster>> c =
        InProcessCluster::Start(ClusterOptions(64u << 20, true, 0));
    if (!c.ok()) return 1;
    std::vector<FatPtr> made;
    const uint64_t before = LogBytes();
    constexpr int kSmall = 2000;
    for (int t = 0; t < kSmall; ++t) {
      if (!AllocateBatch((*c)->host(1), 1, 64, 'x', &made).ok()) return 1;
    }
    c->reset();  // the log closed: every record written
    std::printf(
        "log bytes per single-machine transaction writing one 64-byte object (r = 1): %.0f\n",
        static_cast<double>(LogBytes() - before) / kSmall);
    std::filesystem::remove_all(absl::GetFlag(FLAGS_dir));
  }
  return 0;
}

}  // namespace
}  // namespace farm::bench

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "restart time of a node on its data, by data size");
  return farm::bench::Main();
}
