// Transactions through the public API on an in-process 3-node cluster (r = 3): commit
// paths (single-machine here, shipped, distributed, read-only), what backups hold
// after commit, conflicts and lock release on abort, allocation and free, and the
// error cases of the API.
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "farm/api/farm.h"
#include "farm/base/mutex.h"
#include "farm/base/object_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/node_cluster.h"
#include "tests/support/tx_read_all.h"
#include "tests/support/zk_test_server.h"

namespace farm {
namespace {

using testing::NodeCluster;
using testing::ReadAllInOneTx;
using testing::RunInContext;

class TransactionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NodeCluster>> c =
        NodeCluster::Start(GetParam(), 3, "tx", [this](node::NodeOptions& o) { Adjust(o); });
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }
  // The nodes' options, before they start.
  virtual void Adjust(node::NodeOptions& options) {}

  // Allocates an object on node `on` holding `content` (one transaction there,
  // single-machine).
  FatPtr Create(NodeId on, const std::string& content) {
    absl::StatusOr<FatPtr> p = testing::CreateObjectInOneTx(cluster_->node(on), content);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : FatPtr{};
  }

  // Reads each object in one transaction from node `from` and commits.
  absl::StatusOr<std::vector<std::string>> ReadAll(NodeId from, std::vector<FatPtr> objects) {
    return ReadAllInOneTx(cluster_->node(from), std::move(objects));
  }

  // One transaction from `from`: reads every object, sets it to `value`, commits.
  absl::Status WriteAll(NodeId from, std::vector<FatPtr> objects, const std::string& value) {
    return testing::WriteAllInOneTx(cluster_->node(from), std::move(objects), value);
  }

  std::string Padded(const std::string& v, size_t n) { return v + std::string(n - v.size(), ' '); }

  // The object's header word on its primary (found by trying every node).
  uint64_t VersionOnPrimary(FatPtr p) {
    for (int n = 1; n <= cluster_->size(); ++n) {
      if (const alloc::LocalRegion* r = cluster_->node(n).allocator().blocks().FindRegion(p.addr.region())) {
        return LoadHeaderWord(r->base() + p.addr.offset() + kVersionOffset);
      }
    }
    ADD_FAILURE() << "no primary holds " << p.ToString();
    return 0;
  }

  tx::TxStats Stats(NodeId n) {
    return *RunInContext<absl::StatusOr<tx::TxStats>>(
        cluster_->node(n), [](tx::ThreadContext& ctx, auto finish) { finish(ctx.stats()); });
  }

  std::unique_ptr<NodeCluster> cluster_;
};

TEST_P(TransactionTest, CommitPathsByWhereTheObjectsAre) {
  const FatPtr a = Create(1, std::string(40, 'a'));
  const FatPtr b = Create(1, std::string(40, 'b'));
  const FatPtr c = Create(2, std::string(40, 'c'));
  ASSERT_FALSE(a.is_null() || b.is_null() || c.is_null());

  ASSERT_TRUE(WriteAll(1, {a, b}, "local").ok());
  EXPECT_GE(Stats(1).single_machine, 3u);  // two creations and this one
  ASSERT_TRUE(WriteAll(3, {a, b}, "shipped").ok());
  EXPECT_EQ(Stats(3).shipped, 1u);
  ASSERT_TRUE(WriteAll(3, {a, c}, "distributed").ok());
  EXPECT_EQ(Stats(3).distributed, 1u);

  absl::StatusOr<std::vector<std::string>> seen = ReadAll(2, {a, b, c});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], Padded("distributed", 40));
  EXPECT_EQ((*seen)[1], Padded("shipped", 40));
  EXPECT_EQ((*seen)[2], Padded("distributed", 40));
  EXPECT_GE(Stats(2).read_only, 1u);
  for (FatPtr p : {a, b, c}) EXPECT_FALSE(IsLocked(VersionOnPrimary(p))) << p.ToString();
}

TEST_P(TransactionTest, BackupsHoldTheCommittedObjects) {
  const FatPtr a = Create(1, std::string(100, 'x'));  // single-machine commit
  const FatPtr c = Create(2, std::string(100, 'y'));
  ASSERT_TRUE(WriteAll(3, {a, c}, "both").ok());  // distributed commit
  for (FatPtr p : {a, c}) {
    int copies = 0;
    for (int n = 1; n <= cluster_->size(); ++n) {
      if (cluster_->node(n).backups().Find(p.addr.region()) == nullptr) continue;
      ++copies;
      // On the thread that applied the commits (requests from a coordinator's thread 0
      // are handled by thread 0): the copy is that thread's to read.
      const uint64_t primary_version = VersionOnPrimary(p);
      absl::Status checked = RunInContext<absl::Status>(cluster_->node(n), [&](Context&, auto finish) {
        const char* object = cluster_->node(n).backups().Find(p.addr.region())->base() + p.addr.offset();
        if (CheckCopy(object, p.addr.offset(), p.size, p.incarnation, false) != CopyCheck::kAccepted) {
          return finish(absl::InternalError("the copy is not a committed object"));
        }
        std::string payload(p.size, '\0');
        ReadPayload(object, p.addr.offset(), payload);
        if (payload != Padded("both", 100)) return finish(absl::InternalError("payload: " + payload));
        if (LoadHeaderWord(object + kVersionOffset) != primary_version) {
          return finish(absl::InternalError("another version than the primary's"));
        }
        finish(absl::OkStatus());
      });
      EXPECT_TRUE(checked.ok()) << "node " << n << ": " << checked;
    }
    EXPECT_EQ(copies, 2) << "r = 3: two backups of " << p.ToString();
  }
}

TEST_P(TransactionTest, ConflictsAbortAndReleaseEveryLock) {
  const FatPtr a = Create(1, std::string(40, 'a'));
  const FatPtr c = Create(2, std::string(40, 'c'));
  // T1 (node 3) reads a and c; T2 commits a write of c; T1's distributed commit aborts
  // and leaves neither a nor c locked.
  auto status = RunInContext<absl::Status>(cluster_->node(3), [&](Context& ctx, auto finish) {
    TxHandle t1 = txCreate(ctx);
    txRead(*t1, a, [=, &ctx](absl::StatusOr<ObjBuf*> oa) mutable {
      if (!oa.ok()) return finish(oa.status());
      txRead(*t1, c, [=, &ctx](absl::StatusOr<ObjBuf*> oc) mutable {
        if (!oc.ok()) return finish(oc.status());
        TxHandle t2 = txCreate(ctx);
        txRead(*t2, c, [=](absl::StatusOr<ObjBuf*> c2) mutable {
          if (!c2.ok()) return finish(c2.status());
          (*c2)->data()[0] = 'Z';
          (void)txWrite(*t2, *c2);
          txCommit(*t2, [=](absl::Status s2) mutable {
            if (!s2.ok()) return finish(s2);
            (*oa)->data()[0] = 'A';
            (*oc)->data()[0] = 'C';
            (void)txWrite(*t1, *oa);
            (void)txWrite(*t1, *oc);
            txCommit(*t1, [t1, t2, finish](absl::Status s1) mutable { finish(s1); });
          });
        });
      });
    });
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_FALSE(IsLocked(VersionOnPrimary(a)));
  EXPECT_FALSE(IsLocked(VersionOnPrimary(c)));
  absl::StatusOr<std::vector<std::string>> seen = ReadAll(1, {a, c});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], std::string(40, 'a')) << "T1 wrote nothing";
  EXPECT_EQ((*seen)[1], "Z" + std::string(39, 'c'));
}

TEST_P(TransactionTest, AllocatingTheSlotOfAnObjectReadAndFreedMeanwhileAborts) {
  // T1 reads x; T2 frees x and commits; T1 then allocates objects of x's size on x's
  // machine and thread until the allocator hands x's slot back (same-size slots are
  // reused at once): that allocation fails with Aborted instead of shadowing x.
  const FatPtr x = Create(1, std::string(40, 'x'));
  auto status = RunInContext<absl::Status>(cluster_->node(1), [x](Context& ctx, auto finish) {
    TxHandle t1 = txCreate(ctx);
    txRead(*t1, x, [=, &ctx](absl::StatusOr<ObjBuf*> read) mutable {
      if (!read.ok()) return finish(read.status());
      TxHandle t2 = txCreate(ctx);
      if (absl::Status s = txFree(*t2, x); !s.ok()) return finish(s);
      txCommit(*t2, [=](absl::Status freed) mutable {
        if (!freed.ok()) return finish(freed);
        auto attempts = std::make_shared<int>(0);
        auto next = std::make_shared<std::function<void()>>();
        // Every way out resets *next: it captures `next`, a cycle otherwise.
        auto end = [next, finish](absl::Status s) mutable {
          *next = nullptr;
          finish(std::move(s));
        };
        *next = [=]() mutable {
          if (++*attempts > 256) return end(absl::NotFoundError("the slot never came back"));
          txAlloc(*t1, x.size, Addr(), [=](absl::StatusOr<ObjBuf*> o) mutable {
            if (!o.ok()) return end(o.status());
            if ((*o)->ptr().addr == x.addr) return end(absl::InternalError("the old object was shadowed"));
            (*next)();
          });
        };
        (*next)();
      });
    });
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
}

// txWriteBytes counts what the commit's records carry: an entry header per object
// written, allocated or freed, and the payloads of those written or allocated; reads
// add nothing.
TEST_P(TransactionTest, WriteBytesCountTheCommitRecordsEntries) {
  const FatPtr a = Create(2, std::string(40, 'a'));
  const FatPtr b = Create(3, std::string(100, 'b'));
  absl::StatusOr<std::vector<uint64_t>> bytes =
      RunInContext<absl::StatusOr<std::vector<uint64_t>>>(cluster_->node(1), [a, b](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        auto counts = std::make_shared<std::vector<uint64_t>>();
        counts->push_back(txWriteBytes(*tx));
        txRead(*tx, a, [=](absl::StatusOr<ObjBuf*> read) mutable {
          if (!read.ok()) return finish(read.status());
          counts->push_back(txWriteBytes(*tx));  // read only
          if (absl::Status s = txWrite(*tx, *read); !s.ok()) return finish(s);
          counts->push_back(txWriteBytes(*tx));
          txAlloc(*tx, 200, Addr(), [=](absl::StatusOr<ObjBuf*> made) mutable {
            if (!made.ok()) return finish(made.status());
            counts->push_back(txWriteBytes(*tx));
            if (absl::Status s = txFree(*tx, b); !s.ok()) return finish(s);
            counts->push_back(txWriteBytes(*tx));
            txAbort(*tx);
            finish(*counts);
          });
        });
      });
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, (std::vector<uint64_t>{0, 0, 32 + 40, 32 + 40 + 32 + 200, 32 + 40 + 32 + 200 + 32}));
}

// A transaction's object copies go back to its thread when it ends and serve the next
// transaction there (no allocation per object read), cleared: the next one sees the
// object it reads, its version, and none of the last one's marks (a write that was not
// committed stays unwritten).
TEST_P(TransactionTest, ObjectCopiesAreReusedCleared) {
  const FatPtr a = Create(1, std::string(300, 'a'));
  const FatPtr b = Create(1, std::string(24, 'b'));
  ASSERT_FALSE(a.is_null() || b.is_null());
  const uint64_t a_version = VersionOnPrimary(a);
  const uint64_t b_version = VersionOnPrimary(b);
  struct Seen {
    const ObjBuf* first = nullptr;
    const ObjBuf* second = nullptr;
    std::string second_data;
    uint64_t second_version = 0;
  };
  absl::StatusOr<Seen> seen = RunInContext<absl::StatusOr<Seen>>(cluster_->node(1), [a, b](Context& ctx, auto finish) {
    auto result = std::make_shared<Seen>();
    TxHandle first = txCreate(ctx);
    txRead(*first, a, [=, &ctx](absl::StatusOr<ObjBuf*> o) mutable {
      if (!o.ok()) return finish(o.status());
      result->first = *o;
      std::fill((*o)->data().begin(), (*o)->data().end(), 'x');
      if (absl::Status w = txWrite(*first, *o); !w.ok()) return finish(w);
      first.reset();  // destroyed before commit: aborted
      TxHandle second = txCreate(ctx);
      txRead(*second, b, [=](absl::StatusOr<ObjBuf*> o) mutable {
        if (!o.ok()) return finish(o.status());
        result->second = *o;
        result->second_data.assign((*o)->data().begin(), (*o)->data().end());
        result->second_version = (*o)->version();
        txCommit(*second, [second, result, finish](absl::Status s) mutable {
          if (!s.ok()) return finish(s);
          finish(*result);
        });
      });
    });
  });
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->second, seen->first) << "the second transaction's copy is not the first's, reused";
  EXPECT_EQ(seen->second_data, std::string(24, 'b'));
  EXPECT_EQ(seen->second_version, b_version);
  EXPECT_EQ(VersionOnPrimary(b), b_version) << "the reused copy carried a write mark";
  EXPECT_EQ(VersionOnPrimary(a), a_version) << "the aborted write reached a";
  absl::StatusOr<std::vector<std::string>> now = ReadAll(2, {a, b});
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ((*now)[0], std::string(300, 'a'));
  EXPECT_EQ((*now)[1], std::string(24, 'b'));
}

// objIncrementIncarnation renames an object once per transaction, whatever the number
// of calls; objCommittedPtr names it as it will be after the commit; an object
// allocated in the transaction keeps its name. After the commit only the new name reads.
TEST_P(TransactionTest, ARenameIsOncePerTransactionAndCommittedPtrNamesIt) {
  const FatPtr a = Create(1, std::string(40, 'a'));
  ASSERT_FALSE(a.is_null());
  struct Names {
    FatPtr renamed, allocated, allocated_committed;
  };
  absl::StatusOr<Names> names = RunInContext<absl::StatusOr<Names>>(cluster_->node(1), [a](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    txRead(*tx, a, [tx, finish](absl::StatusOr<ObjBuf*> o) mutable {
      if (!o.ok()) return finish(o.status());
      for (int i = 0; i < 2; ++i) {
        if (absl::Status s = objIncrementIncarnation(*tx, *o); !s.ok()) return finish(s);
      }
      Names n{objCommittedPtr(**o), {}, {}};
      txAlloc(*tx, 16, Addr(), [tx, finish, n](absl::StatusOr<ObjBuf*> fresh) mutable {
        if (!fresh.ok()) return finish(fresh.status());
        if (absl::Status s = objIncrementIncarnation(*tx, *fresh); !s.ok()) return finish(s);
        n.allocated = (*fresh)->ptr();
        n.allocated_committed = objCommittedPtr(**fresh);
        txCommit(*tx, [tx, finish, n](absl::Status s) mutable {
          if (!s.ok()) return finish(s);
          finish(n);
        });
      });
    });
  });
  ASSERT_TRUE(names.ok()) << names.status();
  FatPtr expected = a;
  ++expected.incarnation;
  EXPECT_EQ(names->renamed, expected);
  EXPECT_EQ(names->allocated_committed, names->allocated);
  EXPECT_TRUE(ReadAll(2, {names->renamed, names->allocated}).ok());
  absl::StatusOr<std::vector<std::string>> old = ReadAll(2, {a});
  EXPECT_TRUE(absl::IsFailedPrecondition(old.status())) << old.status();
}

TEST_P(TransactionTest, ErrorCases) {
  const FatPtr a = Create(2, std::string(40, 'a'));
  // Freed in a transaction: later reads fail with FailedPrecondition (incarnation).
  ASSERT_TRUE(RunInContext<absl::Status>(cluster_->node(1), [a](Context& ctx, auto finish) {
                TxHandle tx = txCreate(ctx);
                absl::Status s = txFree(*tx, a);
                if (!s.ok()) return finish(s);
                txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
              }).ok());
  absl::StatusOr<std::vector<std::string>> freed = ReadAll(3, {a});
  EXPECT_EQ(freed.status().code(), absl::StatusCode::kFailedPrecondition) << freed.status();
  // An address in no region.
  FatPtr nowhere{Addr(0x00EEEEEE, 4096), 40, 0};
  absl::StatusOr<std::vector<std::string>> none = ReadAll(3, {nowhere});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound) << none.status();
  // Larger than any object.
  absl::Status large = RunInContext<absl::Status>(cluster_->node(1), [](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    txAlloc(*tx, 2u << 20, Addr(), [tx, finish](absl::StatusOr<ObjBuf*> o) mutable { finish(o.status()); });
  });
  EXPECT_EQ(large.code(), absl::StatusCode::kOutOfRange) << large;
  // Use after commit.
  absl::Status after = RunInContext<absl::Status>(cluster_->node(1), [](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    txCommit(*tx, [tx, finish](absl::Status s) mutable {
      if (!s.ok()) return finish(s);
      txCommit(*tx, [tx, finish](absl::Status again) mutable { finish(again); });
    });
  });
  EXPECT_EQ(after.code(), absl::StatusCode::kFailedPrecondition) << after;
}

// A single-machine commit's record is never taken back once sent (retained_commits.h): a
// backup that does not acknowledge it is asked again, the primary applies only once every
// backup has it, and a caller that waited rpc_timeout hears "outcome unknown" — after which
// the commit still completes. Node 1's sends to node 3 are dropped (the replication seam)
// while `drop` is set.
TEST(TransactionReplicationTest, AnUnansweredBackupIsAskedAgainAndTheCommitCompletes) {
  auto drop = std::make_shared<std::atomic<bool>>(true);
  auto dropped = std::make_shared<std::atomic<int>>(0);
  auto acknowledged = std::make_shared<std::atomic<int>>(0);
  absl::StatusOr<std::unique_ptr<NodeCluster>> c =
      NodeCluster::Start("shm", 3, "txretry", [&](node::NodeOptions& o) {
        o.tx.rpc_timeout = absl::Milliseconds(300);
        if (o.node_id != 1) return;
        o.tx.replication_hook = [=](tx::ReplicationEvent event, const tx::LogRecord& record,
                                    absl::Span<const NodeId>, NodeId backup) {
          if (record.entries.size() < 2) return true;  // creations go through
          if (event == tx::ReplicationEvent::kAcknowledged) {
            ++*acknowledged;
            return true;
          }
          if (backup == 3 && drop->load()) {
            ++*dropped;
            return false;
          }
          return true;
        };
      });
  ASSERT_TRUE(c.ok()) << c.status();
  NodeCluster& cluster = **c;
  absl::StatusOr<FatPtr> a = testing::CreateObjectInOneTx(cluster.node(1), std::string(40, 'a'));
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<FatPtr> b = testing::CreateObjectInOneTx(cluster.node(1), std::string(40, 'b'), a->addr);
  ASSERT_TRUE(b.ok()) << b.status();

  // Node 3 does not answer for longer than rpc_timeout: the outcome is unknown to the caller.
  absl::Status first = testing::WriteAllInOneTx(cluster.node(1), {*a, *b}, "first");
  EXPECT_EQ(first.code(), absl::StatusCode::kDeadlineExceeded) << first;
  EXPECT_NE(first.message().find("outcome unknown"), std::string::npos) << first;
  EXPECT_GE(dropped->load(), 2) << "asked again";
  // Meanwhile the objects stay as they were, and locked against writers.
  absl::StatusOr<std::vector<std::string>> seen = ReadAllInOneTx(cluster.node(2), {*a});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], std::string(40, 'a')) << "applied before every backup had it";
  // Node 3 answers again: the commit completes; it was never taken back.
  drop->store(false);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    seen = ReadAllInOneTx(cluster.node(2), {*a, *b});
    if (seen.ok() && (*seen)[0] != std::string(40, 'a')) break;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < deadline);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], "first" + std::string(35, ' '));
  EXPECT_EQ((*seen)[1], "first" + std::string(35, ' '));
  EXPECT_EQ(acknowledged->load(), 2) << "both backups acknowledged the one record";
  // Every copy holds it at the primary's version.
  for (NodeId n : {2, 3}) {
    const char* object = cluster.node(n).backups().Find(a->addr.region())->base() + a->addr.offset();
    std::string payload(a->size, '\0');
    absl::Status checked = RunInContext<absl::Status>(cluster.node(n), [&](Context&, auto finish) {
      if (CheckCopy(object, a->addr.offset(), a->size, a->incarnation, false) != CopyCheck::kAccepted) {
        return finish(absl::InternalError("not a committed object"));
      }
      ReadPayload(object, a->addr.offset(), payload);
      finish(absl::OkStatus());
    });
    ASSERT_TRUE(checked.ok()) << "node " << n << ": " << checked;
    EXPECT_EQ(payload, "first" + std::string(35, ' ')) << "node " << n;
  }
  // And the next commit goes through at once.
  EXPECT_TRUE(testing::WriteAllInOneTx(cluster.node(1), {*a, *b}, "second").ok());
}

// The same, for a commit that allocates: "outcome unknown" is not a failure, so the
// objects the transaction allocated stay allocated (the commit may still complete, and
// did here: its other write points to the new object). Freeing them on that answer left
// the pointer dangling and the slot free for another allocation.
TEST(TransactionReplicationTest, ACommitWhoseOutcomeIsUnknownKeepsTheObjectsItAllocated) {
  auto drop = std::make_shared<std::atomic<bool>>(true);
  absl::StatusOr<std::unique_ptr<NodeCluster>> c =
      NodeCluster::Start("shm", 3, "txallocunknown", [&](node::NodeOptions& o) {
        o.tx.rpc_timeout = absl::Milliseconds(300);
        if (o.node_id != 1) return;
        o.tx.replication_hook = [=](tx::ReplicationEvent event, const tx::LogRecord& record,
                                    absl::Span<const NodeId>, NodeId backup) {
          if (record.entries.size() < 2) return true;  // creations go through
          return !(event == tx::ReplicationEvent::kSend && backup == 3 && drop->load());
        };
      });
  ASSERT_TRUE(c.ok()) << c.status();
  NodeCluster& cluster = **c;
  absl::StatusOr<FatPtr> a = testing::CreateObjectInOneTx(cluster.node(1), std::string(sizeof(FatPtr), '\0'));
  ASSERT_TRUE(a.ok()) << a.status();
  // One transaction: a new object next to `a`, and `a` pointing to it.
  auto made = std::make_shared<FatPtr>();
  absl::Status first = RunInContext<absl::Status>(cluster.node(1), [a = *a, made](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    txRead(*tx, a, [tx, a, made, finish](absl::StatusOr<ObjBuf*> o) mutable {
      if (!o.ok()) return finish(o.status());
      ObjBuf* pointer = *o;
      txAlloc(*tx, 40, a.addr, [tx, pointer, made, finish](absl::StatusOr<ObjBuf*> n) mutable {
        if (!n.ok()) return finish(n.status());
        const std::string content(40, 'n');
        std::copy(content.begin(), content.end(), (*n)->data().begin());
        *made = (*n)->ptr();
        std::memcpy(pointer->data().data(), made.get(), sizeof(FatPtr));
        if (absl::Status s = txWrite(*tx, pointer); !s.ok()) return finish(s);
        txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
      });
    });
  });
  ASSERT_EQ(first.code(), absl::StatusCode::kDeadlineExceeded) << first;
  ASSERT_NE(first.message().find("outcome unknown"), std::string::npos) << first;
  ASSERT_EQ(made->addr.region(), a->addr.region()) << "the test needs a single-machine commit";
  drop->store(false);
  // The commit completes: `a` points to the new object, which holds what was written.
  absl::StatusOr<std::vector<std::string>> seen;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    seen = ReadAllInOneTx(cluster.node(2), {*a});
    if (seen.ok() && (*seen)[0] != std::string(sizeof(FatPtr), '\0')) break;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < deadline);
  ASSERT_TRUE(seen.ok()) << seen.status();
  ASSERT_EQ((*seen)[0], std::string(reinterpret_cast<const char*>(made.get()), sizeof(FatPtr))) << "never completed";
  absl::StatusOr<std::vector<std::string>> target = ReadAllInOneTx(cluster.node(2), {*made});
  ASSERT_TRUE(target.ok()) << "the committed object was freed: " << target.status();
  EXPECT_EQ((*target)[0], std::string(40, 'n'));
  // And its slot is not handed out again.
  absl::StatusOr<FatPtr> other = testing::CreateObjectInOneTx(cluster.node(1), std::string(40, 'o'), a->addr);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->addr, made->addr) << "the committed object's slot was allocated again";
}

// A configuration change between a transaction's reads and its commit (a participant
// left) aborts it; nothing is written and nothing stays locked.
TEST(TransactionConfigTest, ACommitAfterAParticipantLeftAborts) {
  absl::StatusOr<std::unique_ptr<testing::ZkTestServer>> zk = testing::ZkTestServer::Start();
  ASSERT_TRUE(zk.ok()) << zk.status();
  absl::StatusOr<std::unique_ptr<NodeCluster>> c =
      NodeCluster::Start("tcp", 3, "txcfg", [&](node::NodeOptions& o) {
        o.static_members.clear();
        o.zookeeper = (*zk)->address();
        o.session_timeout = absl::Seconds(2);
        // r = 1: nodes join one by one, and a region created before its backups joined
        // has none (re-replication after a configuration change is recovery's).
        o.replication = 1;
      });
  ASSERT_TRUE(c.ok()) << c.status();
  NodeCluster& cluster = **c;
  auto epoch_of = [&](NodeId n) {
    return *RunInContext<absl::StatusOr<uint64_t>>(cluster.node(n), [](tx::ThreadContext& ctx, auto finish) {
      finish(ctx.placement() == nullptr ? 0 : ctx.placement()->epoch());
    });
  };
  // Every node on the configuration with all three.
  absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline &&
         !(cluster.node(1).membership().current()->members.size() == 3 && epoch_of(1) == epoch_of(2) &&
           epoch_of(2) == epoch_of(3))) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const uint64_t before = epoch_of(2);
  // Two objects on node 3 (its region was created once all three had joined, so node 3
  // stays its primary; earlier regions may be placed elsewhere after the joins, which
  // is recovery's to reconcile).
  auto create = [&](Addr hint) {
    return RunInContext<absl::StatusOr<FatPtr>>(cluster.node(3), [hint](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      txAlloc(*tx, 64, hint, [tx, finish](absl::StatusOr<ObjBuf*> o) mutable {
        if (!o.ok()) return finish(o.status());
        const FatPtr p = (*o)->ptr();
        txCommit(*tx, [tx, p, finish](absl::Status s) mutable {
          if (!s.ok()) return finish(s);
          finish(p);
        });
      });
    });
  };
  absl::StatusOr<FatPtr> a = create(Addr());
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<FatPtr> b = create(a->addr);
  ASSERT_TRUE(b.ok()) << b.status();

  // Node 2 reads and writes both, then node 3 leaves, then node 2 commits.
  TxHandle pending;
  ASSERT_TRUE(RunInContext<absl::Status>(cluster.node(2), [&](Context& ctx, auto finish) {
                pending = txCreate(ctx);
                auto left = std::make_shared<int>(2);
                for (FatPtr p : {*a, *b}) {
                  txRead(*pending, p, [&, left, finish](absl::StatusOr<ObjBuf*> o) mutable {
                    if (!o.ok()) return finish(o.status());
                    (*o)->data()[0] = 'W';
                    (void)txWrite(*pending, *o);
                    if (--*left == 0) finish(absl::OkStatus());
                  });
                }
              }).ok());
  cluster.node(3).Stop();
  deadline = absl::Now() + absl::Seconds(20);
  while (epoch_of(2) == before && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_GT(epoch_of(2), before) << "node 3's departure was never seen";
  absl::Status commit = RunInContext<absl::Status>(cluster.node(2), [&](Context&, auto finish) {
    txCommit(*pending, [&, finish](absl::Status s) mutable {
      pending.reset();
      finish(s);
    });
  });
  EXPECT_EQ(commit.code(), absl::StatusCode::kAborted) << commit;
  EXPECT_NE(commit.message().find("configuration changed"), std::string::npos) << commit;

  // Participants refuse requests of another epoch too: a PREPARE from the old
  // configuration locks nothing (once node 1 has the new one: it may see it after node 2).
  deadline = absl::Now() + absl::Seconds(20);
  while (epoch_of(1) == before && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_GT(epoch_of(1), before) << "node 1 never saw node 3 leave";
  absl::Status prepare = RunInContext<absl::Status>(cluster.node(1), [&](tx::ThreadContext& ctx, auto finish) {
    tx::LogRecord r;
    r.kind = tx::LogKind::kLock;
    r.transaction = 77;
    r.epoch = before;
    ctx.Prepare(r, {ctx.self()}, "", [finish = std::move(finish)](const absl::Status& s) mutable { finish(s); });
  });
  EXPECT_EQ(prepare.code(), absl::StatusCode::kAborted) << prepare;
}

// Node 3 coordinates; the first send of each decision to each other node is lost (as
// with a link that fails, or a full ring). The caller hears "outcome unknown" at once,
// and each decision is sent again until answered: the commit completes, every backup
// applies it at the primary's version, and no lock stays held. (Lost for good, a
// COMMIT-PRIMARY kept its locks and a COMMIT-BACKUP left a copy without the writes its
// primary had made visible.)
class TransactionDecisionLossTest : public TransactionTest {
 protected:
  void Adjust(node::NodeOptions& o) override {
    if (o.node_id != 3) return;
    o.tx.decision_hook = [dropped = dropped_](tx::Decision decision, uint64_t, NodeId node) {
      const int key = static_cast<int>(decision) * 16 + static_cast<int>(node);
      MutexLock lock(&dropped->mu);
      return !dropped->first.insert(key).second;  // drops each first send
    };
  }
  struct Dropped {
    Mutex mu;
    std::set<int> first ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<Dropped> dropped_ = std::make_shared<Dropped>();
};

TEST_P(TransactionDecisionLossTest, LostDecisionsAreSentAgainUntilEveryReplicaHasThem) {
  const FatPtr a = Create(1, std::string(100, 'x'));
  const FatPtr c = Create(2, std::string(100, 'y'));
  const absl::Status first = WriteAll(3, {a, c}, "both");
  EXPECT_THAT(first.message(), ::testing::HasSubstr("outcome unknown")) << first;
  EXPECT_EQ(Stats(3).distributed, 1u);
  // It completes: both objects hold it, unlocked, on their primaries.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::StatusOr<std::vector<std::string>> done;
  do {
    done = ReadAll(2, {a, c});
    if (done.ok() && (*done)[0] == Padded("both", 100) && (*done)[1] == Padded("both", 100) &&
        !IsLocked(VersionOnPrimary(a)) && !IsLocked(VersionOnPrimary(c))) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  } while (absl::Now() < deadline);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)[0], Padded("both", 100)) << "the commit never completed";
  {
    MutexLock lock(&dropped_->mu);
    EXPECT_GE(dropped_->first.size(), 3u) << "COMMIT-BACKUP to 1 and 2, COMMIT-PRIMARY to 1 and 2";
  }
  for (FatPtr p : {a, c}) {
    EXPECT_FALSE(IsLocked(VersionOnPrimary(p))) << p.ToString();
    const uint64_t primary_version = VersionOnPrimary(p);
    int copies = 0;
    for (int n = 1; n <= cluster_->size(); ++n) {
      if (cluster_->node(n).backups().Find(p.addr.region()) == nullptr) continue;
      ++copies;
      absl::Status checked = RunInContext<absl::Status>(cluster_->node(n), [&](Context&, auto finish) {
        const char* object = cluster_->node(n).backups().Find(p.addr.region())->base() + p.addr.offset();
        std::string payload(p.size, '\0');
        ReadPayload(object, p.addr.offset(), payload);
        if (payload != Padded("both", 100)) return finish(absl::InternalError("the copy lacks the commit"));
        if (LoadHeaderWord(object + kVersionOffset) != primary_version) {
          return finish(absl::InternalError("another version than the primary's"));
        }
        finish(absl::OkStatus());
      });
      EXPECT_TRUE(checked.ok()) << "node " << n << ": " << checked;
    }
    EXPECT_EQ(copies, 2);
  }
  // The locks are gone: the next transactions on the objects commit (their decisions
  // reach everyone at once now).
  EXPECT_TRUE(WriteAll(3, {a, c}, "again").ok());
  EXPECT_TRUE(WriteAll(1, {a}, "local").ok());
  absl::StatusOr<std::vector<std::string>> seen = ReadAll(2, {a, c});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ((*seen)[0], Padded("local", 100));
  EXPECT_EQ((*seen)[1], Padded("again", 100));
}

INSTANTIATE_TEST_SUITE_P(Backends, TransactionDecisionLossTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Backends, TransactionTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
