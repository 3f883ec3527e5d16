// A compute-only node (InProcessClusterOptions::compute_only_nodes): it runs
// transactions and lock-free reads on the other nodes' data, holds none itself, is not
// among the members Contexts list, and its own allocations fail with a clear error.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/in_process_cluster.h"
#include "farm/api/sync.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace farm {
namespace {

// Runs the task make(ctx) returns on `host`'s thread 0; waits for its result.
template <typename T, typename Make>
T RunTask(Host& host, Make make) {
  auto result = std::make_shared<std::optional<T>>();
  Notification done;
  Context& ctx = host.context(0);
  ctx.Post([&] {
    Spawn(make(ctx), [result, &done](T value) {
      *result = std::move(value);
      done.Notify();
    });
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  return result->has_value() ? std::move(**result) : T(absl::DeadlineExceededError("no result"));
}

Task<absl::StatusOr<FatPtr>> Allocate(Context& ctx, Addr hint, std::string content) {
  TxHandle tx = txCreate(ctx);
  absl::StatusOr<ObjBuf*> o = co_await TxAlloc(*tx, static_cast<uint32_t>(content.size()), hint);
  if (!o.ok()) co_return o.status();
  std::copy(content.begin(), content.end(), (*o)->data().begin());
  FatPtr p = (*o)->ptr();
  if (absl::Status s = co_await TxCommit(*tx); !s.ok()) co_return s;
  co_return p;
}

Task<absl::StatusOr<std::string>> Overwrite(Context& ctx, FatPtr p, std::string content) {
  TxHandle tx = txCreate(ctx);
  absl::StatusOr<ObjBuf*> o = co_await TxRead(*tx, p);
  if (!o.ok()) co_return o.status();
  std::string old((*o)->data().begin(), (*o)->data().end());
  std::copy(content.begin(), content.end(), (*o)->data().begin());
  if (absl::Status s = txWrite(*tx, *o); !s.ok()) co_return s;
  if (absl::Status s = co_await TxCommit(*tx); !s.ok()) co_return s;
  co_return old;
}

Task<absl::StatusOr<std::string>> ReadLockFree(Context& ctx, FatPtr p) {
  LockFreeOp op = lockFreeStart(ctx);
  absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(op, p);
  if (!copy.ok()) co_return copy.status();
  co_return copy->data;
}

TEST(ComputeNodeTest, RunsTransactionsOnTheOthersDataAndHoldsNone) {
  InProcessClusterOptions o;
  o.nodes = 3;
  o.compute_only_nodes = 1;  // node 3
  o.replication = 2;
  o.dir = ::testing::TempDir() + "compute_node_" + std::to_string(::getpid());
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Host& storage = (*cluster)->host(1);
  Host& compute = (*cluster)->host(3);
  EXPECT_FALSE(storage.compute_only());
  EXPECT_TRUE(compute.compute_only());
  std::vector<NodeId> members;
  RunOnThread(compute, 0, [&](Context& ctx) { members = ctx.members(); });
  EXPECT_EQ(members, (std::vector<NodeId>{1, 2}));  // the machines that hold data

  // Its own allocation fails, saying why; one near another machine's object works.
  absl::StatusOr<FatPtr> local =
      RunTask<absl::StatusOr<FatPtr>>(compute, [](Context& ctx) { return Allocate(ctx, Addr(), "here"); });
  ASSERT_FALSE(local.ok());
  EXPECT_EQ(local.status().code(), absl::StatusCode::kResourceExhausted) << local.status();
  EXPECT_THAT(local.status().message(), ::testing::HasSubstr("compute-only"));
  absl::StatusOr<FatPtr> on_one =
      RunTask<absl::StatusOr<FatPtr>>(storage, [](Context& ctx) { return Allocate(ctx, Addr(), "one!"); });
  ASSERT_TRUE(on_one.ok()) << on_one.status();
  absl::StatusOr<FatPtr> near_one = RunTask<absl::StatusOr<FatPtr>>(
      compute, [hint = on_one->addr](Context& ctx) { return Allocate(ctx, hint, "near"); });
  ASSERT_TRUE(near_one.ok()) << near_one.status();
  EXPECT_EQ(near_one->addr.region(), on_one->addr.region());

  // Transactions and lock-free reads from the compute node on node 1's objects.
  absl::StatusOr<std::string> old = RunTask<absl::StatusOr<std::string>>(
      compute, [p = *on_one](Context& ctx) { return Overwrite(ctx, p, "ONE!"); });
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(*old, "one!");
  absl::StatusOr<std::string> seen = RunTask<absl::StatusOr<std::string>>(
      storage, [p = *on_one](Context& ctx) { return ReadLockFree(ctx, p); });
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, "ONE!");
  seen = RunTask<absl::StatusOr<std::string>>(compute, [p = *near_one](Context& ctx) { return ReadLockFree(ctx, p); });
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, "near");
}

TEST(ComputeNodeTest, SomeNodeMustHoldTheData) {
  InProcessClusterOptions o;
  o.nodes = 2;
  o.compute_only_nodes = 2;
  EXPECT_EQ(InProcessCluster::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm
