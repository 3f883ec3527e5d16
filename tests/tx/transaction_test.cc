// Transactions through the public API on an in-process 3-node cluster (r = 3): commit
// paths (single-machine here, shipped, distributed, read-only), what backups hold
// after commit, conflicts and lock release on abort, allocation and free, and the
// error cases of the API.
#include <string>

#include "absl/strings/str_cat.h"
#include "farm/api/farm.h"
#include "farm/base/object_codec.h"
#include "gtest/gtest.h"
#include "tests/support/node_cluster.h"

namespace farm {
namespace {

using testing::NodeCluster;
using testing::RunInContext;

std::string Str(std::span<const char> s) { return std::string(s.data(), s.size()); }

class TransactionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NodeCluster>> c = NodeCluster::Start(GetParam(), 3, "tx");
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }

  // Allocates an object of `size` bytes on node `on` holding `content` (one
  // transaction there, single-machine).
  FatPtr Create(NodeId on, const std::string& content) {
    absl::StatusOr<FatPtr> p = RunInContext<absl::StatusOr<FatPtr>>(
        cluster_->node(on), [content](Context& ctx, auto finish) {
          TxHandle tx = txCreate(ctx);
          txAlloc(*tx, content.size(), Addr(), [tx, content, finish](absl::StatusOr<ObjBuf*> o) mutable {
            if (!o.ok()) return finish(o.status());
            std::copy(content.begin(), content.end(), (*o)->data().begin());
            const FatPtr p = (*o)->ptr();
            txCommit(*tx, [tx, p, finish](absl::Status s) mutable {
              if (!s.ok()) return finish(s);
              finish(p);
            });
          });
        });
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : FatPtr{};
  }

  // Reads each object in one transaction from node `from` and commits.
  absl::StatusOr<std::vector<std::string>> ReadAll(NodeId from, std::vector<FatPtr> objects) {
    return RunInContext<absl::StatusOr<std::vector<std::string>>>(
        cluster_->node(from), [objects](Context& ctx, auto finish) {
          TxHandle tx = txCreate(ctx);
          auto out = std::make_shared<std::vector<std::string>>(objects.size());
          auto left = std::make_shared<size_t>(objects.size());
          auto failed = std::make_shared<absl::Status>();
          for (size_t i = 0; i < objects.size(); ++i) {
            txRead(*tx, objects[i], [=](absl::StatusOr<ObjBuf*> o) mutable {
              if (o.ok()) (*out)[i] = Str((*o)->data());
              else failed->Update(o.status());
              if (--*left > 0) return;
              if (!failed->ok()) return finish(*failed);
              txCommit(*tx, [tx, out, finish](absl::Status s) mutable {
                if (!s.ok()) return finish(s);
                finish(*out);
              });
            });
          }
        });
  }

  // One transaction from `from`: reads every object, sets it to `value`, commits.
  absl::Status WriteAll(NodeId from, std::vector<FatPtr> objects, const std::string& value) {
    return RunInContext<absl::Status>(cluster_->node(from), [objects, value](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      auto left = std::make_shared<size_t>(objects.size());
      auto failed = std::make_shared<absl::Status>();
      for (const FatPtr& p : objects) {
        txRead(*tx, p, [=](absl::StatusOr<ObjBuf*> o) mutable {
          if (o.ok()) {
            std::fill((*o)->data().begin(), (*o)->data().end(), ' ');
            std::copy(value.begin(), value.begin() + std::min(value.size(), (*o)->data().size()),
                      (*o)->data().begin());
            failed->Update(txWrite(*tx, *o));
          } else {
            failed->Update(o.status());
          }
          if (--*left > 0) return;
          if (!failed->ok()) return finish(*failed);
          txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
        });
      }
    });
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
        cluster_->node(n), [](Context& ctx, auto finish) { finish(ctx.stats()); });
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
      const Region* copy = cluster_->node(n).backups().Find(p.addr.region());
      if (copy == nullptr) continue;
      ++copies;
      const char* object = copy->base() + p.addr.offset();
      ASSERT_EQ(CheckCopy(object, p.addr.offset(), p.size, p.incarnation, false), CopyCheck::kAccepted)
          << "node " << n;
      std::string payload(p.size, '\0');
      ReadPayload(object, p.addr.offset(), payload);
      EXPECT_EQ(payload, Padded("both", 100)) << "node " << n;
      EXPECT_EQ(LoadHeaderWord(object + kVersionOffset), VersionOnPrimary(p)) << "node " << n;
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

INSTANTIATE_TEST_SUITE_P(Backends, TransactionTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
