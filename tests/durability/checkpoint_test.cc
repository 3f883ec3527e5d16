// Checkpoints (farm/node/checkpointer.h) against the log they replace:
//   - equivalence, on real logs: a cluster runs concurrent distributed and
//     single-machine writes, allocations and frees (log_sync none, no checkpoints), and
//     is stopped; then for many random (k1 <= k2 <= end) of each node's log, a
//     checkpoint of records [0, k1), a second one of it and [k1, k2), and replay of that
//     and [k2, end) must leave exactly what replaying [0, end) leaves — every region
//     byte, the transactions in doubt (an `end` inside the log is a crash point), the
//     committed distributed transactions recovery answers for, metadata and boot;
//   - live: with a small --checkpoint threshold, checkpoints run while transactions go
//     on, the data directory stays bounded while the log written grows, and a restart
//     from checkpoint + segments serves every acknowledged write.
// (Crash consistency of the checkpoint's own steps: restart_test's power cut at every
// sync point takes checkpoints in its script.)
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "alloc/backup_regions.h"
#include "alloc/scan.h"
#include "farm/base/object_codec.h"
#include "farm/base/wire.h"
#include "farm/node/checkpointer.h"
#include "farm/node/local_cluster.h"
#include "farm/node/log_set.h"
#include "farm/storage/file_system.h"
#include "farm/storage/log_files.h"
#include "farm/storage/log_format.h"
#include "farm/storage/node_log_types.h"
#include "gtest/gtest.h"
#include "tests/support/tx_read_all.h"
#include "tx/recovery.h"

namespace farm {
namespace {

using testing::CreateObjectInOneTx;
using testing::FreeInOneTx;
using testing::ReplaceInOneTx;
using testing::ReadAllInOneTx;
using testing::WriteAllInOneTx;

constexpr int kNodes = 3;
constexpr size_t kObjectBytes = 40;

std::string TempDir(const char* name) {
  std::string tmpl = absl::StrCat("/tmp/farm-", name, "-XXXXXX");
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

absl::StatusOr<std::unique_ptr<node::LocalCluster>> StartCluster(const std::string& dir,
                                                                 const std::string& log_sync,
                                                                 uint64_t checkpoint_bytes) {
  node::LocalClusterOptions o;
  o.backend = "shm";
  o.nodes = kNodes;
  o.replication = 2;  // a node holds some regions and not others
  o.dir = dir;
  o.keep_data = true;
  o.threads = 2;
  o.log_sync = log_sync;
  o.adjust = [checkpoint_bytes](node::NodeOptions& n) { n.checkpoint_bytes = checkpoint_bytes; };
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = node::LocalCluster::Start(o);
  if (!c.ok()) return c;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (NodeId n = 1; n <= kNodes; ++n) {
    while (!(*c)->node(n).linked()) {
      if (absl::Now() > deadline)
        return absl::DeadlineExceededError(absl::StrCat("node ", n, " not ready"));
      absl::SleepFor(absl::Milliseconds(5));
    }
  }
  return c;
}

// Each (node, thread) owns some objects spread over the nodes and writes them, alone
// and in pairs (distributed when they live on different nodes), frees one now and then
// and allocates a replacement. `last` is what each owned object holds after the last
// acknowledged write (by index into `objects`).
struct Worker {
  NodeId node;
  size_t thread;
  std::vector<FatPtr> objects;
  std::vector<std::string> last;
  int committed = 0;
};

// hints[n]: an address in a region of node n (allocations near it land there).
void RunWorker(node::LocalCluster& c, const std::vector<Addr>& hints, Worker& w, const std::atomic<bool>& stop,
               uint64_t seed) {
  std::mt19937_64 rng(seed);
  node::Node& n = c.node(w.node);
  for (int step = 0; !stop.load(std::memory_order_relaxed); ++step) {
    const size_t a = rng() % w.objects.size(), b = rng() % w.objects.size();
    const std::string value = absl::StrCat("n", w.node, "t", w.thread, "s", step);
    if (step % 9 == 4) {
      // Free one and allocate its replacement on a random node.
      if (!FreeInOneTx(n, w.objects[a], w.thread).ok()) continue;
      const NodeId near = 1 + rng() % kNodes;
      absl::StatusOr<FatPtr> p = CreateObjectInOneTx(
          n, value + std::string(kObjectBytes - value.size(), ' '), hints[near], w.thread);
      ASSERT_TRUE(p.ok()) << p.status();
      w.objects[a] = *p;
      w.last[a] = value;
      ++w.committed;
      continue;
    }
    if (step % 9 == 7 && a != b) {
      // The same in one transaction that also writes another object: distributed when
      // they live on different nodes, so its allocation can be left in doubt.
      const NodeId near = 1 + rng() % kNodes;
      absl::StatusOr<FatPtr> p =
          ReplaceInOneTx(n, w.objects[a], value + std::string(kObjectBytes - value.size(), ' '),
                         hints[near], w.objects[b], w.thread);
      if (absl::IsAborted(p.status())) continue;
      ASSERT_TRUE(p.ok()) << p.status();
      w.objects[a] = *p;
      w.last[a] = value;
      w.last[b] = value;
      ++w.committed;
      continue;
    }
    std::vector<FatPtr> write = {w.objects[a]};
    if (a != b && step % 2 == 0) write.push_back(w.objects[b]);
    absl::Status s = WriteAllInOneTx(n, write, value, w.thread);
    if (absl::IsAborted(s)) continue;
    ASSERT_TRUE(s.ok()) << s;
    w.last[a] = value;
    if (write.size() == 2) w.last[b] = value;
    ++w.committed;
  }
}

// Runs the workload on every (node, thread) for at least `duration`, then until
// `done()` holds or `cap` has passed since the start (a slow machine writes less per
// second: what a test needs of the workload is an amount of log, not a time); returns
// the workers.
std::vector<Worker> RunWorkload(node::LocalCluster& c, absl::Duration duration,
                                const std::function<bool()>& done = [] { return true; },
                                absl::Duration cap = absl::ZeroDuration()) {
  std::vector<Worker> workers;
  std::vector<Addr> hints(kNodes + 1);
  for (NodeId n = 1; n <= kNodes; ++n) {
    absl::StatusOr<FatPtr> anchor = CreateObjectInOneTx(c.node(n), std::string(kObjectBytes, 'a'));
    EXPECT_TRUE(anchor.ok()) << anchor.status();
    if (!anchor.ok()) return workers;
    hints[n] = anchor->addr;
  }
  for (NodeId n = 1; n <= kNodes; ++n) {
    for (size_t t = 0; t < 2; ++t) {
      Worker w{n, t, {}, {}, 0};
      for (NodeId on = 1; on <= kNodes; ++on) {
        for (int i = 0; i < 2; ++i) {
          const std::string v = absl::StrCat("init", n, t, on, i);
          absl::StatusOr<FatPtr> p = CreateObjectInOneTx(
              c.node(n), v + std::string(kObjectBytes - v.size(), ' '), hints[on], t);
          EXPECT_TRUE(p.ok()) << p.status();
          if (!p.ok()) return workers;
          w.objects.push_back(*p);
          w.last.push_back(v);
        }
      }
      workers.push_back(std::move(w));
    }
  }
  const absl::Time start = absl::Now();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < workers.size(); ++i) {
    threads.emplace_back([&c, &hints, &workers, &stop, i] { RunWorker(c, hints, workers[i], stop, 1000 + i); });
  }
  absl::SleepFor(duration);
  while (!done() && absl::Now() < start + std::max(duration, cap)) absl::SleepFor(absl::Milliseconds(100));
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads) t.join();
  return workers;
}

void ExpectServes(node::LocalCluster& c, const std::vector<Worker>& workers) {
  for (const Worker& w : workers) {
    absl::StatusOr<std::vector<std::string>> seen;
    for (int attempt = 0; attempt < 100; ++attempt) {
      seen = ReadAllInOneTx(c.node(1 + (w.node % kNodes)), w.objects);
      if (!absl::IsAborted(seen.status())) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ASSERT_TRUE(seen.ok()) << seen.status();
    for (size_t i = 0; i < w.objects.size(); ++i) {
      EXPECT_EQ((*seen)[i], w.last[i] + std::string(kObjectBytes - w.last[i].size(), ' '))
          << "node " << w.node << " thread " << w.thread << " object " << i;
    }
  }
}

// Writes records [from, to) as a log file of `identity`.
void WriteSegment(storage::FileSystem* fs, const std::string& path, uint64_t identity,
                  const std::vector<storage::LogRecordView>& records, size_t from, size_t to) {
  std::string bytes = storage::EncodeLogHeader(identity);
  for (size_t i = from; i < to; ++i)
    storage::EncodeRecord(records[i].type, records[i].payload, &bytes);
  (void)fs->Remove(path);
  absl::StatusOr<std::unique_ptr<storage::WritableFile>> f = fs->OpenForAppend(path);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append(bytes).ok());
}

std::string Describe(const tx::InDoubt& d) {
  std::string s = absl::StrCat(d.primary.transaction, "/", d.primary.epoch, ":");
  for (const tx::LogEntry& e : d.primary.entries)
    absl::StrAppend(&s, " p", e.address.ToString(), "v", e.version, "=", e.payload);
  for (const tx::LogEntry& e : d.backup.entries)
    absl::StrAppend(&s, " b", e.address.ToString(), "v", e.version, "=", e.payload);
  return s;
}

struct Coverage {
  int trials = 0;
  int with_carried = 0;
  int with_in_doubt = 0;
  int in_doubt_allocations = 0;
  uint64_t image_bytes = 0;
};

// Replays `records` [0, end) directly, and through checkpoints of [0, k1) and [k1, k2)
// followed by [k2, end); both must leave the same state.
void CheckEquivalent(storage::FileSystem* fs, const std::string& scratch, uint64_t identity,
                     NodeId self, const std::vector<storage::LogRecordView>& records, size_t k1,
                     size_t k2, size_t end, Coverage* coverage) {
  SCOPED_TRACE(absl::StrCat("node ", self, ": checkpoints at ", k1, " and ", k2, ", end ", end,
                            " of ", records.size()));
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  WriteSegment(fs, storage::SegmentPath(scratch, 0), identity, records, 0, k1);
  WriteSegment(fs, storage::SegmentPath(scratch, 1), identity, records, k1, k2);
  WriteSegment(fs, storage::SegmentPath(scratch, 2), identity, records, k2, end);
  node::CheckpointRequest r;
  r.fs = fs;
  r.dir = scratch;
  r.identity = identity;
  r.self = self;
  r.segments = {0};
  absl::StatusOr<node::CheckpointStats> first = node::BuildCheckpoint(r);
  ASSERT_TRUE(first.ok()) << first.status();
  r.previous = 1;
  r.segments = {1};
  absl::StatusOr<node::CheckpointStats> second = node::BuildCheckpoint(r);
  ASSERT_TRUE(second.ok()) << second.status();
  coverage->with_carried += (first->carried + second->carried) > 0;
  coverage->image_bytes += second->image_bytes;

  absl::StatusOr<node::LogSet> set = node::ReadLogSet(fs, scratch, identity, 2, {2});
  ASSERT_TRUE(set.ok()) << set.status();
  alloc::BackupRegions via_checkpoint, direct;
  absl::StatusOr<tx::ReplayResult> a =
      tx::ReplayNodeLog(set->records, self, tx::ReplayMode::kRestart, &via_checkpoint);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<tx::ReplayResult> b = tx::ReplayNodeLog(
      absl::MakeConstSpan(records).subspan(0, end), self, tx::ReplayMode::kRestart, &direct);
  ASSERT_TRUE(b.ok()) << b.status();
  ++coverage->trials;
  coverage->with_in_doubt += !b->in_doubt.empty();

  EXPECT_EQ(a->boot, b->boot);
  EXPECT_EQ(a->metadata, b->metadata);
  std::vector<RegionId> held_a = via_checkpoint.Held(), held_b = direct.Held();
  std::sort(held_a.begin(), held_a.end());
  std::sort(held_b.begin(), held_b.end());
  ASSERT_EQ(held_a, held_b);
  for (RegionId id : held_b) {
    const Region* x = via_checkpoint.Find(id);
    const Region* y = direct.Find(id);
    ASSERT_EQ(x->size(), y->size());
    EXPECT_EQ(via_checkpoint.CreatorOf(id), direct.CreatorOf(id));
    if (std::memcmp(x->base(), y->base(), y->size()) != 0) {
      uint64_t at = 0;
      while (x->base()[at] == y->base()[at]) ++at;
      uint64_t last = at;
      for (uint64_t i = at; i < y->size(); ++i) {
        if (x->base()[i] != y->base()[i]) last = i;
      }
      std::string xs, ys;
      for (uint64_t i = at & ~uint64_t{7}; i < (at & ~uint64_t{7}) + 24; ++i) {
        absl::StrAppend(&xs, absl::Hex(static_cast<uint8_t>(x->base()[i]), absl::kZeroPad2));
        absl::StrAppend(&ys, absl::Hex(static_cast<uint8_t>(y->base()[i]), absl::kZeroPad2));
      }
      ADD_FAILURE() << "region " << id << " differs at offsets " << at << ".." << last << ": " << xs
                    << " vs " << ys;
    }
  }
  // A slot an in-doubt transaction allocated here reads allocated, so the allocator's
  // scan keeps it while recovery may still commit the object.
  for (const tx::InDoubt& d : b->in_doubt) {
    for (const tx::LogEntry& e : d.primary.entries) {
      if (e.op != tx::LogOp::kAlloc) continue;
      ++coverage->in_doubt_allocations;
      const Region* copy = direct.Find(e.address.region());
      ASSERT_NE(copy, nullptr);
      const uint64_t word = LoadHeaderWord(copy->base() + e.address.offset() + kIncarnationOffset);
      EXPECT_TRUE(IsAllocated(word)) << e.address.ToString();
      absl::StatusOr<alloc::RegionScan> scan = alloc::ScanRegion(copy->base(), copy->id(), copy->size());
      ASSERT_TRUE(scan.ok()) << scan.status();
      bool live = false;
      for (const alloc::RegionScan::Object& o : scan->LiveObjects()) live |= o.addr == e.address;
      EXPECT_TRUE(live) << e.address.ToString() << " is not live to the allocator's scan";
    }
  }
  std::vector<std::string> doubt_a, doubt_b;
  for (const tx::InDoubt& d : a->in_doubt) doubt_a.push_back(Describe(d));
  for (const tx::InDoubt& d : b->in_doubt) doubt_b.push_back(Describe(d));
  std::sort(doubt_a.begin(), doubt_a.end());
  std::sort(doubt_b.begin(), doubt_b.end());
  EXPECT_EQ(doubt_a, doubt_b);
  // What recovery answers about distributed transactions: every commit and every
  // undecided one still known; an abort may be forgotten (unknown reads as not committed).
  for (size_t i = 0; i < end; ++i) {
    if (records[i].type != storage::TypeByte(storage::NodeLogType::kTxPrepared)) continue;
    const tx::TxKey key{LoadLe<uint64_t>(records[i].payload.data() + 8),
                        LoadLe<uint64_t>(records[i].payload.data() + 16)};
    const tx::TxOutcome expected = b->outcomes.at(key);
    auto it = a->outcomes.find(key);
    const tx::TxOutcome got = it == a->outcomes.end() ? tx::TxOutcome::kUnknown : it->second;
    if (expected == tx::TxOutcome::kAborted) {
      EXPECT_TRUE(got == tx::TxOutcome::kAborted || got == tx::TxOutcome::kUnknown)
          << key.transaction;
    } else {
      EXPECT_EQ(got, expected) << "transaction " << key.transaction;
    }
  }
}

TEST(CheckpointTest, CheckpointsPlusTheRestReplayExactlyAsTheWholeLogAtEveryCut) {
  const std::string dir = TempDir("checkpoint-equivalence");
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = StartCluster(dir, "none", 0);
    ASSERT_TRUE(c.ok()) << c.status();
    std::vector<Worker> workers = RunWorkload(**c, absl::Seconds(2));
    int committed = 0;
    for (const Worker& w : workers) committed += w.committed;
    std::printf("workload: %d transactions committed\n", committed);
    ASSERT_GT(committed, 100);
  }
  std::unique_ptr<storage::FileSystem> fs = storage::NewPosixFileSystem();
  Coverage coverage;
  std::mt19937_64 rng(7);
  for (NodeId self = 1; self <= kNodes; ++self) {
    const std::string node_dir = absl::StrCat(dir, "/node-", self);
    absl::StatusOr<std::string> bytes = fs->ReadFile(storage::SegmentPath(node_dir, 0));
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    const uint64_t identity = LoadLe<uint64_t>(bytes->data() + 16);
    absl::StatusOr<storage::ParsedLog> parsed = storage::ParseLog(*bytes, identity, "log");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const std::vector<storage::LogRecordView>& records = parsed->records;
    ASSERT_GT(records.size(), 100u);
    const std::string scratch = absl::StrCat(dir, "/scratch-", self);
    // The ends, the whole log, and random cuts.
    CheckEquivalent(fs.get(), scratch, identity, self, records, 0, 0, records.size(), &coverage);
    CheckEquivalent(fs.get(), scratch, identity, self, records, records.size(), records.size(),
                    records.size(), &coverage);
    for (int trial = 0; trial < 25 && !HasFatalFailure(); ++trial) {
      size_t cut[3] = {rng() % (records.size() + 1), rng() % (records.size() + 1),
                       rng() % (records.size() + 1)};
      std::sort(cut, cut + 3);
      CheckEquivalent(fs.get(), scratch, identity, self, records, cut[0], cut[1], cut[2],
                      &coverage);
    }
  }
  std::printf(
      "%d cuts compared: %d with records carried over a checkpoint, %d ending with transactions in "
      "doubt (%d slots they allocated), %lu bytes of region images\n",
      coverage.trials, coverage.with_carried, coverage.with_in_doubt, coverage.in_doubt_allocations,
      static_cast<unsigned long>(coverage.image_bytes));
  // The workload must have made the cases that matter.
  EXPECT_GT(coverage.with_carried, 5);
  EXPECT_GT(coverage.with_in_doubt, 5);
  EXPECT_GT(coverage.in_doubt_allocations, 0);
  std::filesystem::remove_all(dir);
}

uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) total += e.file_size();
  }
  return total;
}

TEST(CheckpointTest, CheckpointsRunUnderLoadKeepTheDirectoryBoundedAndRestartServesEveryWrite) {
  const std::string dir = TempDir("checkpoint-live");
  constexpr uint64_t kThreshold = 256 << 10;
  std::vector<Worker> workers;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = StartCluster(dir, "always", kThreshold);
    ASSERT_TRUE(c.ok()) << c.status();
    // Two checkpoints on every node: about 6 s of this workload on a quiet machine.
    workers = RunWorkload(
        **c, absl::Seconds(6),
        [&] {
          for (NodeId n = 1; n <= kNodes; ++n) {
            if ((*c)->node(n).log_state().checkpoints < 2) return false;
          }
          return true;
        },
        absl::Seconds(60));
    for (NodeId n = 1; n <= kNodes; ++n) {
      const node::LogState s = (*c)->node(n).log_state();
      const uint64_t on_disk = DirectoryBytes(absl::StrCat(dir, "/node-", n));
      std::printf(
          "node %u: %lu checkpoints, the last %lu bytes in %.3f s; %lu log bytes since; directory "
          "%lu bytes\n",
          n, static_cast<unsigned long>(s.checkpoints),
          static_cast<unsigned long>(s.checkpoint_bytes), s.last_checkpoint_seconds,
          static_cast<unsigned long>(s.file_bytes), static_cast<unsigned long>(on_disk));
      EXPECT_GE(s.checkpoints, 2u) << "node " << n;
      EXPECT_TRUE(s.checkpoint_error.empty()) << s.checkpoint_error;
      // Bounded: the checkpoint, the segments up to the next one (the threshold or the
      // checkpoint's size), the segment written while it is built, and the identity.
      EXPECT_LT(on_disk, 2 * s.checkpoint_bytes + 3 * kThreshold + (64 << 10)) << "node " << n;
    }
  }
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = StartCluster(dir, "always", kThreshold);
  ASSERT_TRUE(c.ok()) << c.status();
  for (NodeId n = 1; n <= kNodes; ++n) {
    const node::LogState s = (*c)->node(n).log_state();
    EXPECT_TRUE(s.has_checkpoint) << "node " << n << " restarted without a checkpoint";
  }
  ExpectServes(**c, workers);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace farm
