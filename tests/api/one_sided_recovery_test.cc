// The raw facet of the public API (farm/api/one_sided.h) when things fail: what a
// one-sided object becomes when its primary's node stops (DataLoss from every survivor,
// then rawFree works), and after the whole cluster restarts on its logs (its allocation
// is logged, its one-sided writes are not: DataLoss, never zeros or old bytes).
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/one_sided.h"
#include "farm/node/local_cluster.h"
#include "farm/storage/fault_injecting_file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/one_sided_test_util.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/node_cluster.h"
#include "tests/support/zk_test_server.h"

namespace farm {
namespace {

using ::testing::HasSubstr;
using one_sided_test::RunInContext;
using one_sided_test::RunTask;
using testing::NodeCluster;

// --- When the primary's node stops ---

// A one-sided object on node 3 (r = 3): node 3 stops, a backup of its region is
// promoted, and the object — whose bytes were written at node 3 only — answers DataLoss
// from every survivor; rawFree frees it, and new objects work.
class OneSidedFailoverTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OneSidedFailoverTest, AnObjectWhosePrimaryStoppedIsLostThenFreed) {
  absl::StatusOr<std::unique_ptr<testing::ZkTestServer>> zk = testing::ZkTestServer::Start();
  if (absl::IsFailedPrecondition(zk.status())) GTEST_SKIP() << zk.status();
  ASSERT_TRUE(zk.ok()) << zk.status();
  absl::StatusOr<std::unique_ptr<NodeCluster>> c =
      NodeCluster::Start(GetParam(), 3, "onesided_failover", [&](node::NodeOptions& o) {
        o.static_members.clear();
        o.zookeeper = (*zk)->address();
        o.session_timeout = absl::Seconds(2);
        o.replication = 3;
        o.min_members = 3;  // first regions placed with every member: all hold copies
      });
  ASSERT_TRUE(c.ok()) << c.status();
  NodeCluster& cluster = **c;
  // Every node on the configuration with all three, linked.
  auto epoch_of = [&](NodeId n) {
    return *RunInContext<absl::StatusOr<uint64_t>>(cluster.node(n), [](tx::ThreadContext& ctx, auto finish) {
      finish(ctx.placement() == nullptr ? 0 : ctx.placement()->epoch());
    });
  };
  auto settled = [&] {
    for (NodeId n : {1u, 2u, 3u}) {
      if (!cluster.node(n).linked() || cluster.node(n).membership().current() == nullptr ||
          cluster.node(n).membership().current()->members.size() != 3 || epoch_of(n) != epoch_of(1)) {
        return false;
      }
    }
    return true;
  };
  absl::Time settle = absl::Now() + absl::Seconds(30);
  while (!settled() && absl::Now() < settle) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(settled()) << "the three nodes never shared a configuration";
  auto alloc_on = [&](NodeId n) {
    return RunTask<absl::StatusOr<RawPtr>>(
        cluster.node(n), [](Context& ctx) -> Task<absl::StatusOr<RawPtr>> {
          return [](Context& ctx) -> Task<absl::StatusOr<RawPtr>> { co_return co_await RawAlloc(ctx, 64); }(ctx);
        });
  };
  auto read_on = [&](NodeId n, RawPtr p) {
    return RunInContext<absl::StatusOr<std::string>>(cluster.node(n), [p](Context& ctx, auto finish) {
      rawRead(ctx, p, 0, 16, [finish](absl::StatusOr<RawBytes> r) mutable {
        if (!r.ok()) return finish(r.status());
        finish(std::string(r->data.data(), r->data.size()));
      });
    });
  };
  absl::StatusOr<RawPtr> r = alloc_on(3);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(RunInContext<absl::Status>(cluster.node(1), [&](Context& ctx, auto finish) {
                rawWrite(ctx, *r, 0, std::span<const char>("0123456789abcdef", 16),
                         [finish](absl::Status s) mutable { finish(s); });
              }).ok());
  absl::StatusOr<std::string> before = read_on(2, *r);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(*before, "0123456789abcdef");

  const uint64_t before_epoch = epoch_of(2);
  cluster.node(3).Stop();
  // Until the survivors adopt the next configuration, their ops still go to node 3 (an
  // in-process node's fabric outlives Stop; a killed process's would fail them). Once
  // they have: ops fail while no promoted copy serves (Unavailable, or no primary
  // yet), then the object is lost — never the old bytes.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while ((epoch_of(1) == before_epoch || epoch_of(2) == before_epoch) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GT(epoch_of(2), before_epoch) << "node 3's departure was never seen";
  absl::Status seen;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> after = read_on(2, *r);
    seen = after.status();
    if (after.ok()) {
      ADD_FAILURE() << "a survivor read the bytes the stopped primary held: " << *after;
      break;
    }
    if (absl::IsDataLoss(seen)) break;
    // Meanwhile only "try again" errors: never "freed" nor "not a one-sided object".
    ASSERT_TRUE(absl::IsUnavailable(seen) || absl::IsNotFound(seen) || absl::IsDeadlineExceeded(seen)) << seen;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(absl::IsDataLoss(seen)) << seen;
  EXPECT_THAT(std::string(seen.message()), HasSubstr("lost"));
  EXPECT_TRUE(absl::IsDataLoss(read_on(1, *r).status())) << read_on(1, *r).status();
  absl::Status write = RunInContext<absl::Status>(cluster.node(1), [&](Context& ctx, auto finish) {
    rawCas64(ctx, *r, 0, 0, 1, [finish](absl::StatusOr<uint64_t> s) mutable { finish(s.status()); });
  });
  EXPECT_TRUE(absl::IsDataLoss(write)) << write;
  // rawFree frees a lost object (retried while the region is re-replicated: frozen
  // regions refuse locks for a while).
  absl::Status freed;
  for (int i = 0; i < 100; ++i) {
    freed = RunInContext<absl::Status>(cluster.node(2), [&](Context& ctx, auto finish) {
      rawFree(ctx, *r, [finish](absl::Status s) mutable { finish(s); });
    });
    if (!absl::IsAborted(freed) && !absl::IsUnavailable(freed)) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_TRUE(freed.ok()) << freed;
  EXPECT_TRUE(absl::IsFailedPrecondition(read_on(1, *r).status())) << read_on(1, *r).status();
  absl::StatusOr<RawPtr> fresh = alloc_on(2);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(*read_on(1, *fresh), std::string(16, '\0'));
}

// --- When the whole cluster restarts on its data ---

// A one-sided object's allocation is logged (kAllocRaw), its one-sided writes are not:
// after the cluster stops and starts again on its logs, the object exists and answers
// DataLoss (never zeros as if it were new, never the old bytes), a transactional object
// beside it keeps its committed bytes, and rawFree frees the lost object.
TEST(OneSidedRestartTest, AfterARestartAnObjectIsLostAndCanBeFreed) {
  char tmpl[] = "/tmp/farm-onesided-restart-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto fs = std::make_unique<storage::FaultInjectingFileSystem>();
  auto start = [&]() -> absl::StatusOr<std::unique_ptr<node::LocalCluster>> {
    node::LocalClusterOptions o;
    o.backend = "tcp";
    o.nodes = 3;
    o.dir = dir;
    o.threads = 1;
    o.adjust = [&fs](node::NodeOptions& n) {
      n.log_sync = "always";
      n.file_system = fs.get();
    };
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = node::LocalCluster::Start(o);
    if (!c.ok()) return c;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    for (NodeId n = 1; n <= 3; ++n) {
      while (!(*c)->node(n).linked()) {
        if (absl::Now() > deadline) return absl::DeadlineExceededError(absl::StrCat("node ", n, " not ready"));
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
    return c;
  };
  auto read = [](node::Node& n, RawPtr p) {
    return RunInContext<absl::StatusOr<std::string>>(n, [p](Context& ctx, auto finish) {
      rawRead(ctx, p, 0, 8, [finish](absl::StatusOr<RawBytes> r) mutable {
        if (!r.ok()) return finish(r.status());
        finish(std::string(r->data.data(), r->data.size()));
      });
    });
  };
  RawPtr raw;
  FatPtr control;
  {
    absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = start();
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<RawPtr> r = RunTask<absl::StatusOr<RawPtr>>((*c)->node(1), [](Context& ctx) {
      return [](Context& ctx) -> Task<absl::StatusOr<RawPtr>> { co_return co_await RawAlloc(ctx, 64); }(ctx);
    });
    ASSERT_TRUE(r.ok()) << r.status();
    raw = *r;
    ASSERT_TRUE(RunInContext<absl::Status>((*c)->node(2), [&](Context& ctx, auto finish) {
                  rawWrite(ctx, raw, 0, std::span<const char>("written!", 8),
                           [finish](absl::Status s) mutable { finish(s); });
                }).ok());
    ASSERT_EQ(*read((*c)->node(3), raw), "written!");
    absl::StatusOr<FatPtr> t = RunInContext<absl::StatusOr<FatPtr>>((*c)->node(1), [](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      txAlloc(*tx, 8, Addr(), [tx, finish](absl::StatusOr<ObjBuf*> o) mutable {
        if (!o.ok()) return finish(o.status());
        std::memcpy((*o)->data().data(), "control!", 8);
        const FatPtr p = (*o)->ptr();
        txCommit(*tx, [tx, p, finish](absl::Status s) mutable {
          if (!s.ok()) return finish(s);
          finish(p);
        });
      });
    });
    ASSERT_TRUE(t.ok()) << t.status();
    control = *t;
  }
  absl::StatusOr<std::unique_ptr<node::LocalCluster>> c = start();
  ASSERT_TRUE(c.ok()) << c.status();
  for (NodeId from : {1u, 2u, 3u}) {
    absl::StatusOr<std::string> after = read((*c)->node(from), raw);
    EXPECT_TRUE(absl::IsDataLoss(after.status())) << "from node " << from << ": "
                                                   << (after.ok() ? *after : after.status().ToString());
  }
  absl::StatusOr<std::string> kept = RunInContext<absl::StatusOr<std::string>>((*c)->node(2), [&](Context& ctx, auto finish) {
    auto op = std::make_shared<LockFreeOp>(lockFreeStart(ctx));
    lockFreeRead(*op, control, [op, finish](absl::StatusOr<LockFreeObject> r) mutable {
      lockFreeEnd(*op);
      if (!r.ok()) return finish(r.status());
      finish(std::string(r->data.data(), r->data.size()));
    });
  });
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, "control!");
  absl::Status freed = RunInContext<absl::Status>((*c)->node(3), [&](Context& ctx, auto finish) {
    rawFree(ctx, raw, [finish](absl::Status s) mutable { finish(s); });
  });
  EXPECT_TRUE(freed.ok()) << freed;
  EXPECT_TRUE(absl::IsFailedPrecondition(read((*c)->node(2), raw).status()));
  c->reset();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, OneSidedFailoverTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
