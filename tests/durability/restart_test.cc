// Restart from the durable log, in one process with the fault-injecting file layer
// (farm/storage/fault_injecting_file_system.h) as every node's disk:
//   - a cluster stopped and started again on its data serves every committed write —
//     single-machine, shipped and distributed commits, allocations — and allocates and
//     commits anew (the allocator rebuilt by the scan), under every --log_sync policy;
//   - "power cut" at every sync point of a scripted workload (CrashAtSync(k) for every
//     k until the workload completes without reaching it; then every file loses what was
//     not synced), checkpoints of every node's log included: after restart every acknowledged transaction is present, and each
//     transaction's writes are all present or all absent, including those left in doubt
//     (their nodes ask the others and settle them), and every replica of each object
//     holds what its primary holds;
//   - a single-machine commit only the backups logged (the primary's disk failed), or
//     whose backups' or primary's sync failed (written, maybe durable), is never
//     reported aborted and after the restart is in every replica (each node its own
//     disk: node_fs_);
//   - a node refuses a directory whose log is corrupt before its tail, naming the file
//     and offset; a torn tail is cut off and the records before it serve;
//   - a full disk fails commits with ResourceExhausted while reads go on, and commits
//     resume when there is room; a failed sync fails the log for good, and its node
//     leaves the cluster (tests/failover/log_failure_test: the others go on).
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/base/object_codec.h"
#include "farm/node/local_cluster.h"
#include "farm/storage/fault_injecting_file_system.h"
#include "gtest/gtest.h"
#include "farm/api/farm.h"
#include "tests/support/node_cluster.h"
#include "tests/support/tx_read_all.h"

namespace farm {
namespace {

using storage::FaultInjectingFileSystem;
using testing::CreateObjectInOneTx;
using testing::ReadAllInOneTx;
using testing::WriteAllInOneTx;

constexpr int kNodes = 3;
constexpr size_t kObjectBytes = 48;

std::string Padded(const std::string& v) { return v + std::string(kObjectBytes - v.size(), ' '); }

class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-restart-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }

  // Starts nodes 1..3 (r = 3, tcp) on `fs_` under `dir_` with `log_sync`.
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> Start(const std::string& log_sync = "always") {
    node::LocalClusterOptions o;
    o.backend = "tcp";
    o.nodes = kNodes;
    o.dir = dir_;
    o.threads = 1;
    o.adjust = [this, log_sync](node::NodeOptions& n) {
      n.log_sync = log_sync;
      n.file_system = node_fs_.empty() ? fs_.get() : node_fs_[n.node_id - 1].get();
      n.tx.rpc_timeout = absl::Seconds(2);
    };
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = node::LocalCluster::Start(o);
    if (!c.ok()) return c;
    // Start returns once the nodes are linked; a restarted node is ready only once it
    // has taken its regions back.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    for (NodeId n = 1; n <= kNodes; ++n) {
      while (!(*c)->node(n).linked()) {
        if (absl::Now() > deadline) return absl::DeadlineExceededError(absl::StrCat("node ", n, " not ready"));
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
    return c;
  }

  std::string dir_;
  std::unique_ptr<FaultInjectingFileSystem> fs_ = std::make_unique<FaultInjectingFileSystem>();
  // When set, node n's disk is node_fs_[n - 1] instead of fs_ (each crashes alone).
  std::vector<std::unique_ptr<FaultInjectingFileSystem>> node_fs_;
};

// One object on each node (its primary), created by that node.
std::vector<FatPtr> CreateObjects(node::LocalCluster& c, const std::string& content) {
  std::vector<FatPtr> objects;
  for (NodeId n = 1; n <= kNodes; ++n) {
    absl::StatusOr<FatPtr> p = CreateObjectInOneTx(c.node(n), Padded(content));
    EXPECT_TRUE(p.ok()) << p.status();
    objects.push_back(p.ok() ? *p : FatPtr{});
  }
  return objects;
}

// Reads until no object is locked by a transaction recovery has not settled yet.
absl::StatusOr<std::vector<std::string>> ReadSettled(node::LocalCluster& c, NodeId from,
                                                     const std::vector<FatPtr>& objects) {
  absl::StatusOr<std::vector<std::string>> seen;
  for (int attempt = 0; attempt < 200; ++attempt) {
    seen = ReadAllInOneTx(c.node(from), objects);
    if (seen.ok() || !absl::IsAborted(seen.status())) return seen;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return seen;
}

// What every copy of `p` holds, primary first: "<payload> v<version>", read on each
// node's thread 0 (threads = 1: the thread that applies its backup records). A copy the
// read rule refuses reads as the reason.
std::vector<std::string> Copies(node::LocalCluster& c, FatPtr p) {
  std::vector<std::string> primary, backups;
  for (NodeId n = 1; n <= kNodes; ++n) {
    node::Node& node = c.node(n);
    absl::StatusOr<std::string> copy = testing::RunInContext<absl::StatusOr<std::string>>(
        node, [&](Context&, auto finish) {
          const char* base = nullptr;
          if (const alloc::LocalRegion* r = node.allocator().blocks().FindRegion(p.addr.region())) {
            base = r->base();
          } else if (const Region* r = node.backups().Find(p.addr.region())) {
            base = r->base();
          }
          if (base == nullptr) return finish(std::string());
          const char* object = base + p.addr.offset();
          const CopyCheck check = CheckCopy(object, p.addr.offset(), p.size, p.incarnation, false);
          if (check != CopyCheck::kAccepted) return finish(std::string(CopyCheckName(check)));
          std::string payload(p.size, '\0');
          ReadPayload(object, p.addr.offset(), payload);
          finish(absl::StrCat(payload, " v", Unlocked(LoadHeaderWord(object + kVersionOffset))));
        });
    if (!copy.ok() || copy->empty()) continue;
    (node.allocator().blocks().FindRegion(p.addr.region()) != nullptr ? primary : backups).push_back(*copy);
  }
  primary.insert(primary.end(), backups.begin(), backups.end());
  return primary;
}

// Waits (a backup hears a settled decision after its primary) until every copy of each
// of `objects` holds what its primary holds; the copies that differ otherwise.
std::string DivergentCopies(node::LocalCluster& c, const std::vector<FatPtr>& objects) {
  std::string divergent;
  for (int attempt = 0; attempt < 100; ++attempt) {
    divergent.clear();
    for (FatPtr p : objects) {
      const std::vector<std::string> copies = Copies(c, p);
      for (const std::string& copy : copies) {
        if (copy == copies.front()) continue;
        absl::StrAppend(&divergent, p.ToString(), ": primary has '", copies.front(), "', a backup '", copy, "'; ");
      }
      if (copies.size() != kNodes) absl::StrAppend(&divergent, p.ToString(), ": ", copies.size(), " copies; ");
    }
    if (divergent.empty()) return divergent;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return divergent;
}

class RestartPolicyTest : public RestartTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(RestartPolicyTest, StopAndStartServesEveryCommit) {
  std::vector<FatPtr> objects;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start(GetParam());
    ASSERT_TRUE(c.ok()) << c.status();
    objects = CreateObjects(**c, "created");
    ASSERT_TRUE(WriteAllInOneTx((*c)->node(1), {objects[0]}, "single-machine").ok());
    ASSERT_TRUE(WriteAllInOneTx((*c)->node(3), {objects[1]}, "shipped").ok());
    ASSERT_TRUE(WriteAllInOneTx((*c)->node(2), {objects[0], objects[2]}, "distributed").ok());
  }  // stopped: the logs are closed (synced unless the policy is none)
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start(GetParam());
  ASSERT_TRUE(c.ok()) << c.status();
  for (NodeId from = 1; from <= kNodes; ++from) {
    absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, from, objects);
    ASSERT_TRUE(seen.ok()) << seen.status();
    EXPECT_EQ((*seen)[0], Padded("distributed"));
    EXPECT_EQ((*seen)[1], Padded("shipped"));
    EXPECT_EQ((*seen)[2], Padded("distributed"));
  }
  // The allocators were rebuilt by the scan: new objects do not overlap the old ones.
  std::vector<FatPtr> more = CreateObjects(**c, "after restart");
  for (const FatPtr& p : more) {
    for (const FatPtr& old : objects) EXPECT_NE(p.addr.raw(), old.addr.raw());
  }
  ASSERT_TRUE(WriteAllInOneTx((*c)->node(1), {objects[1], more[2]}, "again").ok());
  absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 3, {objects[1], more[2], objects[0]});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], Padded("again"));
  EXPECT_EQ((*seen)[1], Padded("again"));
  EXPECT_EQ((*seen)[2], Padded("distributed"));
}

INSTANTIATE_TEST_SUITE_P(Policies, RestartPolicyTest, ::testing::Values("always", "interval:1", "none"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (ch == ':') ch = '_';
                           }
                           return name;
                         });

// The scripted workload after the crash point is armed: distributed writes of all three
// objects (then of pairs) from each node in turn, single-machine writes, and a checkpoint
// of every node's log in the middle (from = 0; checkpointer.h), so that the power cut
// also lands in each of the checkpoint's steps.
struct Step {
  NodeId from;               // 0: every node takes a checkpoint
  std::vector<int> objects;  // indexes
};
const std::vector<Step>& Script() {
  static const auto* script = new std::vector<Step>{
      {1, {0, 1, 2}}, {2, {0}}, {3, {1, 2}}, {0, {}}, {2, {0, 1, 2}}, {3, {2}}, {1, {0, 2}}, {3, {0, 1, 2}},
  };
  return *script;
}

// Allocates an object of `bytes` near `hint` in a transaction that then aborts: the
// allocator frees the slot again, which moves its incarnation on without a record.
absl::StatusOr<FatPtr> AllocateAndAbort(node::Node& node, size_t bytes, Addr hint) {
  return testing::RunInContext<absl::StatusOr<FatPtr>>(node, [bytes, hint](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    txAlloc(*tx, bytes, hint, [tx, finish](absl::StatusOr<ObjBuf*> o) mutable {
      if (!o.ok()) return finish(o.status());
      const FatPtr p = (*o)->ptr();
      txAbort(*tx);
      finish(p);
    });
  });
}

// A slot whose earlier allocations aborted (unlogged frees: its incarnation moved on) and
// that a committed transaction then allocated: replay must give the object the
// incarnation the committed pointer names, not the one the replayed slot had. Both a
// single-machine commit (kTxApplied) and a distributed one (kTxPrepared, then the
// decision) of an allocation; r = 3, so the backups' copies apply them as well.
TEST_F(RestartTest, AnObjectAllocatedInASlotWhoseEarlierAllocationsAbortedServesAfterRestart) {
  std::vector<FatPtr> objects;
  std::vector<std::string> contents;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    const std::vector<FatPtr> anchors = CreateObjects(**c, "anchor");
    for (int round = 0; round < 2; ++round) {
      for (NodeId n = 1; n <= kNodes; ++n) {
        const Addr hint = anchors[n - 1].addr;
        // Twice, so that the slot's incarnation is 2 ahead of its replayed one.
        absl::StatusOr<FatPtr> aborted = AllocateAndAbort((*c)->node(n), kObjectBytes, hint);
        ASSERT_TRUE(aborted.ok()) << aborted.status();
        aborted = AllocateAndAbort((*c)->node(n), kObjectBytes, hint);
        ASSERT_TRUE(aborted.ok()) << aborted.status();
        const std::string content = Padded(absl::StrCat("node ", n, " round ", round));
        absl::StatusOr<FatPtr> p;
        if (round == 0) {  // single-machine
          p = CreateObjectInOneTx((*c)->node(n), content, hint);
        } else {  // distributed: coordinated by another node, which also writes its anchor
          const NodeId other = n % kNodes + 1;
          p = testing::ReplaceInOneTx((*c)->node(other), objects[n - 1], content, hint, anchors[other - 1]);
        }
        ASSERT_TRUE(p.ok()) << p.status();
        // The same slot, reused at once for its class: the case under test.
        ASSERT_EQ(p->addr.raw(), aborted->addr.raw()) << p->ToString() << " vs " << aborted->ToString();
        ASSERT_NE(p->incarnation, 0u) << p->ToString();
        if (round == 0) {
          objects.push_back(*p);
          contents.push_back(content);
        } else {
          objects[n - 1] = *p;
          contents[n - 1] = content;
        }
      }
    }
  }
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_TRUE(c.ok()) << c.status();
  for (NodeId from = 1; from <= kNodes; ++from) {
    absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, from, objects);
    ASSERT_TRUE(seen.ok()) << seen.status();
    EXPECT_EQ(*seen, contents);
  }
  // Freeing through the committed pointers works too (the allocator sees that incarnation).
  for (NodeId n = 1; n <= kNodes; ++n) {
    EXPECT_TRUE(testing::FreeInOneTx((*c)->node(n), objects[n - 1]).ok());
  }
}

TEST_F(RestartTest, PowerCutAtEverySyncPointLosesNoAcknowledgedCommit) {
  int crash_points = 0;
  int from_checkpoint = 0;  // node restarts that read a checkpoint
  for (int k = 1;; ++k) {
    SCOPED_TRACE(absl::StrCat("crash at the ", k, "th sync of the workload"));
    std::filesystem::remove_all(dir_);
    fs_ = std::make_unique<FaultInjectingFileSystem>();
    std::vector<FatPtr> objects;
    // What each object must hold after restart: the last acknowledged value, or the
    // value of the step in flight at the crash (which may have committed).
    std::vector<std::string> acknowledged(kNodes, "created");
    std::vector<std::string> in_flight(kNodes, "");
    bool reached = false;
    {
      absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
      ASSERT_TRUE(c.ok()) << c.status();
      objects = CreateObjects(**c, "created");
      fs_->CrashAtSync(k);
      for (size_t step = 0; step < Script().size(); ++step) {
        const Step& s = Script()[step];
        if (s.from == 0) {
          // A checkpoint cut short by the crash leaves the files it would have replaced.
          for (NodeId n = 1; n <= kNodes; ++n) (void)(*c)->node(n).CheckpointNow();
          continue;
        }
        std::vector<FatPtr> written;
        for (int i : s.objects) written.push_back(objects[i]);
        const std::string value = absl::StrCat("step ", step);
        absl::Status st = WriteAllInOneTx((*c)->node(s.from), written, value);
        if (!st.ok()) {
          for (int i : s.objects) in_flight[i] = value;
          break;
        }
        for (int i : s.objects) acknowledged[i] = value;
      }
      reached = fs_->crashed();
    }
    if (!reached) break;  // the workload finished before the k-th sync: every point was covered
    ++crash_points;
    fs_->Restart();  // unsynced bytes are gone
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    for (NodeId n = 1; n <= kNodes; ++n) from_checkpoint += (*c)->node(n).log_state().has_checkpoint;
    absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 1 + k % kNodes, objects);
    ASSERT_TRUE(seen.ok()) << seen.status();
    bool in_flight_applied = false, in_flight_missing = false;
    for (int i = 0; i < kNodes; ++i) {
      const std::string& v = (*seen)[i];
      if (in_flight[i].empty()) {
        EXPECT_EQ(v, Padded(acknowledged[i])) << "object " << i;
        continue;
      }
      EXPECT_TRUE(v == Padded(acknowledged[i]) || v == Padded(in_flight[i])) << "object " << i << ": " << v;
      (v == Padded(in_flight[i]) ? in_flight_applied : in_flight_missing) = true;
    }
    EXPECT_FALSE(in_flight_applied && in_flight_missing) << "the transaction in flight committed in part";
    // Replicas agree: a backup that kept a commit its primary lost (or the reverse)
    // would serve it after the next failover, and skip the primary's later writes.
    EXPECT_EQ(DivergentCopies(**c, objects), "");
  }
  EXPECT_GE(crash_points, 5);
  EXPECT_GT(from_checkpoint, 0);
  std::printf("power cut tried at %d sync points; %d node restarts read a checkpoint\n", crash_points,
              from_checkpoint);
}

// A single-machine commit whose record reached both backups' logs and not its
// primary's (the primary's disk fails at that sync): it was never acknowledged, but the
// backups applied it. After the whole cluster restarts, every replica must hold the same
// object — the primary takes the commit from its backups before the region serves —
// so that the next acknowledged write of it applies at the backups too (they apply an
// entry only to a copy at the version the primary locked it from).
TEST_F(RestartTest, ACommitOnlyTheBackupsLoggedIsTakenByThePrimaryAtRestart) {
  for (int n = 0; n < kNodes; ++n) node_fs_.push_back(std::make_unique<FaultInjectingFileSystem>());
  std::vector<FatPtr> objects;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    objects = CreateObjects(**c, "created");
    node_fs_[0]->CrashAtSync(1);  // node 1 is the primary of objects[0]
    const absl::Status unknown = WriteAllInOneTx((*c)->node(1), {objects[0]}, "backups only");
    EXPECT_FALSE(unknown.ok()) << "acknowledged although the primary's log failed";
    // Both backups applied it (their logs are intact).
    ASSERT_EQ(Copies(**c, objects[0]).size(), size_t{kNodes});
    EXPECT_EQ(Copies(**c, objects[0])[1].substr(0, kObjectBytes), Padded("backups only"));
  }
  ASSERT_TRUE(node_fs_[0]->crashed());
  node_fs_[0]->Restart();  // node 1 loses the unsynced record
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 2, objects);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], Padded("backups only")) << "some replica applied it: it commits everywhere";
  EXPECT_EQ(DivergentCopies(**c, objects), "");
  ASSERT_TRUE(WriteAllInOneTx((*c)->node(1), {objects[0]}, "after restart").ok());
  EXPECT_EQ(DivergentCopies(**c, objects), "");
  seen = ReadSettled(**c, 3, objects);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], Padded("after restart"));
}

// A failed sync leaves the records it should have covered written: a restart (of the
// processes; the disk kept them) may replay them. So a single-machine commit whose
// backups' logs failed that way is not refused — its primary asks again, the caller
// hears "outcome unknown" — and after the restart every replica holds it.
TEST_F(RestartTest, ACommitWhoseBackupsSyncFailedIsNotRefusedAndCommitsEverywhereAfterRestart) {
  for (int n = 0; n < kNodes; ++n) node_fs_.push_back(std::make_unique<FaultInjectingFileSystem>());
  std::vector<FatPtr> objects;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    objects = CreateObjects(**c, "created");
    node_fs_[1]->FailNextSync(absl::DataLossError("injected: the disk lost a write"));
    node_fs_[2]->FailNextSync(absl::DataLossError("injected: the disk lost a write"));
    const absl::Status s = WriteAllInOneTx((*c)->node(1), {objects[0]}, "maybe");
    EXPECT_TRUE(absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s)) << "not an abort: " << s;
  }
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();  // the files as they were
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 2, objects);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], Padded("maybe"));
  EXPECT_EQ(DivergentCopies(**c, objects), "");
}

// The same at the primary: its own record written and its sync failed while every backup
// refused the record (their disks full) — not an abort either; after the restart it
// commits, at the backups too.
TEST_F(RestartTest, ACommitWhosePrimarysSyncFailedIsNotReportedAbortedAndCommitsEverywhereAfterRestart) {
  for (int n = 0; n < kNodes; ++n) node_fs_.push_back(std::make_unique<FaultInjectingFileSystem>());
  std::vector<FatPtr> objects;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    objects = CreateObjects(**c, "created");
    node_fs_[0]->FailNextSync(absl::DataLossError("injected: the disk lost a write"));
    node_fs_[1]->set_capacity(node_fs_[1]->used());
    node_fs_[2]->set_capacity(node_fs_[2]->used());
    const absl::Status s = WriteAllInOneTx((*c)->node(1), {objects[0]}, "maybe");
    EXPECT_TRUE(absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s)) << "not an abort: " << s;
    node_fs_[1]->set_capacity(std::numeric_limits<uint64_t>::max());
    node_fs_[2]->set_capacity(std::numeric_limits<uint64_t>::max());
  }
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 3, objects);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], Padded("maybe"));
  EXPECT_EQ(DivergentCopies(**c, objects), "");
}

TEST_F(RestartTest, ACorruptRecordBeforeTheTailStopsTheStartNamingFileAndOffset) {
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    CreateObjects(**c, "some data");
  }
  // A byte inside node 2's first record (after the 32-byte header and the record's
  // 9-byte header), with records after it: corruption, not a torn tail.
  const std::string log = dir_ + "/node-2/log";
  ASSERT_TRUE(fs_->Corrupt(log, 32 + 9 + 1, "\xff").ok());
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss) << c.status();
  EXPECT_NE(c.status().message().find(log), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("offset 32"), std::string::npos) << c.status();
}

TEST_F(RestartTest, ADamagedCheckpointStopsTheStartNamingItAndAnIncompleteOneIsIgnored) {
  std::vector<FatPtr> objects;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    objects = CreateObjects(**c, "checkpointed");
    for (NodeId n = 1; n <= kNodes; ++n) ASSERT_TRUE((*c)->node(n).CheckpointNow().ok());
    ASSERT_TRUE(WriteAllInOneTx((*c)->node(1), objects, "after it").ok());
  }
  // A checkpoint a crash cut short (never renamed into place) is not read, and goes.
  const std::string half = dir_ + "/node-1/checkpoint.2.tmp";
  {
    absl::StatusOr<std::unique_ptr<storage::WritableFile>> f = fs_->OpenForAppend(half);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("FaRMlog\0 and then nothing").ok());
    ASSERT_TRUE((*f)->Sync().ok());
  }
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 2, objects);
    ASSERT_TRUE(seen.ok()) << seen.status();
    for (const std::string& v : *seen) EXPECT_EQ(v, Padded("after it"));
    EXPECT_TRUE(absl::IsNotFound(fs_->ReadFile(half).status())) << "the incomplete checkpoint was left behind";
  }
  // A damaged byte in node 3's checkpoint (inside its first record): the start fails
  // naming the file; the replaced segments are gone, so nothing older can stand in.
  const std::string checkpoint = dir_ + "/node-3/checkpoint.1";
  ASSERT_TRUE(fs_->Corrupt(checkpoint, 32 + 9 + 1, "\xff").ok());
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss) << c.status();
  EXPECT_NE(c.status().message().find(checkpoint), std::string::npos) << c.status();
}

TEST_F(RestartTest, ATornTailIsCutOffAndTheRecordsBeforeItServe) {
  std::vector<FatPtr> objects;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
    ASSERT_TRUE(c.ok()) << c.status();
    objects = CreateObjects(**c, "before the tear");
  }
  // Half a record at the end of every log: a write the crash cut short.
  for (NodeId n = 1; n <= kNodes; ++n) {
    absl::StatusOr<std::unique_ptr<storage::WritableFile>> f = fs_->OpenForAppend(absl::StrCat(dir_, "/node-", n, "/log"));
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(std::string("\x40\x00\x00\x00\x12\x34", 6)).ok());
    ASSERT_TRUE((*f)->Sync().ok());
  }
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 2, objects);
  ASSERT_TRUE(seen.ok()) << seen.status();
  for (const std::string& v : *seen) EXPECT_EQ(v, Padded("before the tear"));
  ASSERT_TRUE(WriteAllInOneTx((*c)->node(3), objects, "after the tear").ok());
}

TEST_F(RestartTest, AFullDiskFailsCommitsWithResourceExhaustedAndReadsGoOn) {
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<FatPtr> objects = CreateObjects(**c, "kept");
  fs_->set_capacity(fs_->used() + 64);  // no room for another transaction's records
  absl::Status single = WriteAllInOneTx((*c)->node(1), {objects[0]}, "lost single");
  EXPECT_EQ(single.code(), absl::StatusCode::kResourceExhausted) << single;
  absl::Status distributed = WriteAllInOneTx((*c)->node(2), objects, "lost distributed");
  EXPECT_EQ(distributed.code(), absl::StatusCode::kResourceExhausted) << distributed;
  absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, 3, objects);
  ASSERT_TRUE(seen.ok()) << seen.status();
  for (const std::string& v : *seen) EXPECT_EQ(v, Padded("kept"));
  // Room again: commits go on, and what was acknowledged survives a restart.
  fs_->set_capacity(std::numeric_limits<uint64_t>::max());
  ASSERT_TRUE(WriteAllInOneTx((*c)->node(2), objects, "after the disk").ok());
  c->reset();
  c = Start();
  ASSERT_TRUE(c.ok()) << c.status();
  seen = ReadSettled(**c, 1, objects);
  ASSERT_TRUE(seen.ok()) << seen.status();
  for (const std::string& v : *seen) EXPECT_EQ(v, Padded("after the disk"));
}

TEST_F(RestartTest, AFailedSyncFailsTheLogForGoodAndNothingMoreIsAcknowledged) {
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = Start();
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<FatPtr> objects = CreateObjects(**c, "kept");
  fs_->FailNextSync(absl::DataLossError("injected: the disk lost a write"));
  EXPECT_FALSE(WriteAllInOneTx((*c)->node(1), objects, "not acknowledged").ok());
  // The log that failed its sync takes nothing more: every later commit that needs it
  // fails too (one node's log failed; each of these writes touches every node).
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(WriteAllInOneTx((*c)->node(1 + i % kNodes), objects, "still not").ok());
  }
  // The node whose log failed left (a node that cannot log holds no replicas). With a
  // static member list nobody takes its regions over, and it answers no request; the
  // others' objects are as they were, or all written by the first write (all or nothing).
  std::vector<NodeId> failed;
  for (NodeId n = 1; n <= kNodes; ++n) {
    if (!(*c)->node(n).log_failure().ok()) failed.push_back(n);
  }
  ASSERT_EQ(failed.size(), 1u) << "one node's sync failed";
  const NodeId gone = failed[0];
  EXPECT_NE((*c)->node(gone).Stats().last_error().find("the log failed"), std::string::npos)
      << (*c)->node(gone).Stats().last_error();
  const NodeId healthy = gone % kNodes + 1;
  std::vector<FatPtr> readable;
  for (NodeId n = 1; n <= kNodes; ++n) {
    if (n != gone) readable.push_back(objects[n - 1]);
  }
  absl::StatusOr<std::vector<std::string>> seen = ReadSettled(**c, healthy, readable);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], (*seen)[1]) << "half a transaction";
  for (const std::string& v : *seen) EXPECT_TRUE(v == Padded("kept") || v == Padded("not acknowledged")) << v;
}

}  // namespace
}  // namespace farm
