// Memory under overwrites of one key (issue 20's "out of memory"): each overwrite with a
// value of another size allocates the new value object near the key's bucket and frees
// the old one. Once the bucket's region is full, the values go to a region nearby, and
// they must take slots of blocks already there: a new block per overwrite (retired
// empty, given back only after an end-of-epoch round) made the node create regions
// until its capacity was gone after a few hundred overwrites under load. Transactions
// that allocate a value and abort give it back too. For every table layout.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "alloc/thread_allocator.h"
#include "farm/api/node_host.h"
#include "farm/api/sync.h"
#include "farm/node/node.h"
#include "gtest/gtest.h"
#include "kv/table_store.h"
#include "tests/kv/kv_cluster.h"

namespace farm::kv {
namespace {

using testing::KvCluster;

struct AllocatorTotals {
  uint64_t blocks_acquired = 0;
  uint64_t live_objects = 0;  // allocations - frees, over every thread of every node
  uint32_t regions = 0;
};

// Read on each worker thread (a thread allocator's counters are its own).
AllocatorTotals Totals(KvCluster& kv, int nodes) {
  AllocatorTotals totals;
  for (NodeId n = 1; n <= static_cast<NodeId>(nodes); ++n) {
    node::Node& node = dynamic_cast<NodeHost&>(kv.host(n)).node();
    totals.regions += node.allocator().Stats().blocks.regions;
    for (size_t t = 0; t < node.thread_count(); ++t) {
      Notification done;
      kv.host(n).context(t).Post([&] {
        const alloc::ThreadAllocatorStats& s = node.context(t).allocator().stats();
        totals.blocks_acquired += s.blocks_acquired;
        totals.live_objects += s.allocations - s.frees;
        done.Notify();
      });
      done.WaitForNotification();
    }
  }
  return totals;
}

// SET churn with one of the 3000 sizes 1..3000 (every size once per 3000 calls).
std::string Value(int k) { return std::string(1 + (k * 977) % 3000, static_cast<char>('a' + k % 26)); }

// Parameter: the table layout (both keep values over their inline sizes out of line).
class OverwriteMemoryTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OverwriteMemoryTest, OverwritesOfOneKeyTakeNoNewBlockEach) {
  absl::StatusOr<std::unique_ptr<KvCluster>> c =
      KvCluster::Start("shm", 3, "kv_overwrite_memory", KvTableOptions{GetParam(), TableOptions{}});
  ASSERT_TRUE(c.ok()) << c.status();
  KvCluster& kv = **c;
  // The cuckoo layout allocates nothing per operation (data entries are preallocated
  // and recycled: running out would be ResourceExhausted) and has no transactions.
  const bool transactions = GetParam() != "cuckoo";
  if (!transactions) {
    std::printf("cuckoo: BeginTxn is Unimplemented (no transactions): the aborted-transaction part is skipped\n");
  }
  // Every size once: each size class gets its block (the bucket's region fills up).
  for (int k = 0; k < 3000; ++k) ASSERT_TRUE(kv.Put(1 + k % 3, "churn", Value(k)).ok()) << k;
  ASSERT_TRUE(kv.Put(1, "churn", std::string(2000, 'x')).ok());
  const AllocatorTotals before = Totals(kv, 3);

  // Every size again, and transactions that write a value and abort (dropped
  // uncommitted), from every node: nothing new is needed, nothing stays allocated.
  for (int k = 0; k < 3000; ++k) {
    const absl::Status put = kv.Put(1 + k % 3, "churn", Value(k));
    ASSERT_TRUE(put.ok()) << k << ": " << put;
    if (k % 10 != 0 || !transactions) continue;
    const absl::Status aborted = kv.kv().Run<absl::Status>(1 + k % 3, 0, [k](KvClient& client, auto finish) {
      auto store = std::make_shared<TableStore>(client);
      std::shared_ptr<StoreTxn> txn = store->BeginTxn();
      txn->Put("churn", Value(k + 1), [store, txn, finish = std::move(finish)](absl::Status s) mutable {
        txn.reset();  // aborts: the value it allocated is freed
        finish(s);
      });
    });
    ASSERT_TRUE(aborted.ok()) << k << ": " << aborted;
  }
  ASSERT_TRUE(kv.Put(1, "churn", std::string(2000, 'y')).ok());
  const AllocatorTotals after = Totals(kv, 3);

  EXPECT_LE(after.blocks_acquired - before.blocks_acquired, 2u)
      << "overwrites of one key took new blocks (" << before.blocks_acquired << " before, "
      << after.blocks_acquired << " after)";
  EXPECT_EQ(after.regions, before.regions);
  EXPECT_EQ(after.live_objects, before.live_objects) << "objects leaked";
  ASSERT_EQ(**kv.Get(2, "churn"), std::string(2000, 'y'));
}

INSTANTIATE_TEST_SUITE_P(Layouts, OverwriteMemoryTest, ::testing::Values("hopscotch", "linear", "chained", "cuckoo"));

}  // namespace
}  // namespace farm::kv
