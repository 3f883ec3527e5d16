// The indexes of long lists (graph/list_index.h): the B+tree against std::map, random
// link operations on lists that are indexed from their second block (with trees of four
// entries a node, so they are several levels deep) against the reference model with the
// indexes checked against their lists as they go, and a hub whose single-link
// operations read a few objects whatever its length.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/coro.h"
#include "graph/btree.h"
#include "graph/graph_tx.h"
#include "graph/list_index_build.h"
#include "graph/memory_graph.h"
#include "graph/run_tx.h"
#include "gtest/gtest.h"
#include "tests/graph/graph_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::graph::testing {
namespace {

class ListIndexTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Start(ListIndexTuning tuning) {
    absl::StatusOr<std::unique_ptr<GraphCluster>> g = GraphCluster::Start(GetParam(), 3, "list_index_test", 3, tuning);
    ASSERT_TRUE(g.ok()) << g.status();
    g_ = std::move(*g);
  }
  // Starts a cluster that indexes no list by itself (a load would index a long one, as
  // a build does), with the list (5, kDefaultLinkType) of `links` links.
  void StartWithUnindexedList(int links) {
    ListIndexTuning never;
    never.min_blocks = 1u << 30;
    ASSERT_NO_FATAL_FAILURE(Start(never));
    std::vector<Link> list;
    for (int i = 0; i < links; ++i) list.push_back(Link{5, kDefaultLinkType, i, Visibility::kVisible, 1, i, "x"});
    ASSERT_EQ(*g_->AddLinks(1, 5, kDefaultLinkType, list), static_cast<uint64_t>(links));
  }
  // Runs body(ctx) as a task on node 1's thread 0 and waits for its result.
  template <typename T>
  absl::StatusOr<T> OnThread(std::function<Task<absl::StatusOr<T>>(Context&)> body) {
    return g_->local().Run<absl::StatusOr<T>>(
        1, 0, [body](GraphClient& c, auto finish) { Spawn(body(c.ctx()), std::move(finish)); });
  }
  std::unique_ptr<GraphCluster> g_;
};

using Map = std::map<TreeKey, TreeValue>;

// One transaction of random changes and lookups on the tree at `root`, mirrored in
// `model`; the tree's root after it commits.
Task<absl::StatusOr<FatPtr>> TreeRound(Context& ctx, FatPtr root, Map* model, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TxHandle tx = txCreate(ctx);
  TxTree tree(*tx, root, Addr());
  auto key = [&] { return TreeKey{static_cast<int64_t>(rng() % 3) - 1, static_cast<int64_t>(rng() % 400)}; };
  for (int op = 0; op < 25; ++op) {
    const TreeKey k = key();
    switch (rng() % 6) {
      case 0:
      case 1: {
        const TreeValue v{rng(), rng()};
        if (absl::Status st = co_await tree.Put(k, v); !st.ok()) co_return st;
        (*model)[k] = v;
        break;
      }
      case 2: {
        absl::StatusOr<bool> erased = co_await tree.Erase(k);
        if (!erased.ok()) co_return erased.status();
        if (*erased != (model->erase(k) == 1)) co_return absl::InternalError("Erase disagrees");
        break;
      }
      case 3: {
        absl::StatusOr<std::optional<TreeValue>> v = co_await tree.Find(k);
        if (!v.ok()) co_return v.status();
        auto it = model->find(k);
        if (v->has_value() != (it != model->end()) || (v->has_value() && !(**v == it->second))) {
          co_return absl::InternalError(absl::StrCat("Find disagrees at ", k.hi, "/", k.lo));
        }
        break;
      }
      case 4: {
        absl::StatusOr<std::optional<TreeEntry>> e = co_await tree.Ceil(k);
        if (!e.ok()) co_return e.status();
        auto it = model->lower_bound(k);
        if (e->has_value() != (it != model->end()) || (e->has_value() && !((*e)->key == it->first))) {
          co_return absl::InternalError(absl::StrCat("Ceil disagrees at ", k.hi, "/", k.lo));
        }
        break;
      }
      default: {
        absl::StatusOr<std::optional<TreeEntry>> e = co_await tree.Before(k);
        if (!e.ok()) co_return e.status();
        auto it = model->lower_bound(k);
        const bool has = it != model->begin();
        if (e->has_value() != has || (has && !((*e)->key == std::prev(it)->first))) {
          co_return absl::InternalError(absl::StrCat("Before disagrees at ", k.hi, "/", k.lo));
        }
        break;
      }
    }
  }
  absl::StatusOr<std::optional<TreeEntry>> last = co_await tree.Last();
  if (!last.ok()) co_return last.status();
  if (last->has_value() != !model->empty() || (last->has_value() && !((*last)->key == model->rbegin()->first))) {
    co_return absl::InternalError("Last disagrees");
  }
  absl::StatusOr<FatPtr> new_root = tree.Finish();
  if (!new_root.ok()) co_return new_root.status();
  if (absl::Status st = co_await TxCommit(*tx); !st.ok()) co_return st;
  co_return *new_root;
}

// Every entry, read back in a transaction of its own (which also checks the
// separators).
Task<absl::StatusOr<std::vector<TreeEntry>>> TreeEntries(Context& ctx, FatPtr root) {
  TxHandle tx = txCreate(ctx);
  TxTree tree(*tx, root, Addr());
  absl::StatusOr<std::vector<TreeEntry>> all = co_await tree.All();
  txAbort(*tx);
  co_return all;
}

// (Tasks are free functions taking their arguments by value: a coroutine lambda's
// captures die with the lambda, before the task ends.)
Task<absl::StatusOr<FatPtr>> NewTree(Context& ctx, TreeShape shape) {
  TxHandle tx = txCreate(ctx);
  absl::StatusOr<FatPtr> p = co_await TxTree::WriteNewNode(*tx, shape, 0, {}, Addr());
  if (!p.ok()) co_return p.status();
  if (absl::Status st = co_await TxCommit(*tx); !st.ok()) co_return st;
  co_return *p;
}

// Erases every key of `model` in one transaction; the root after.
Task<absl::StatusOr<FatPtr>> DrainTree(Context& ctx, FatPtr root, const Map* model) {
  TxHandle tx = txCreate(ctx);
  TxTree tree(*tx, root, Addr());
  for (const auto& [k, v] : *model) {
    absl::StatusOr<bool> erased = co_await tree.Erase(k);
    if (!erased.ok()) co_return erased.status();
    if (!*erased) co_return absl::InternalError("a key went missing");
  }
  absl::StatusOr<std::optional<TreeEntry>> last = co_await tree.Last();
  if (!last.ok()) co_return last.status();
  if (last->has_value()) co_return absl::InternalError("a drained tree has a last entry");
  absl::StatusOr<FatPtr> r = tree.Finish();
  if (!r.ok()) co_return r.status();
  if (absl::Status st = co_await TxCommit(*tx); !st.ok()) co_return st;
  co_return *r;
}

TEST_P(ListIndexTest, TreeMatchesAMapThroughSplitsAndEmptying) {
  Start({});
  const TreeShape shape{16, 16, 4};
  absl::StatusOr<FatPtr> root =
      OnThread<FatPtr>([shape](Context& ctx) { return NewTree(ctx, shape); });
  ASSERT_TRUE(root.ok()) << root.status();
  Map model;
  // Rounds [from, to), each one transaction, the tree read back whole after each.
  auto rounds = [&](uint64_t from, uint64_t to) {
    for (uint64_t round = from; round < to; ++round) {
      const FatPtr at = *root;
      root = OnThread<FatPtr>([at, &model, round](Context& ctx) { return TreeRound(ctx, at, &model, round); });
      ASSERT_TRUE(root.ok()) << "round " << round << ": " << root.status();
      absl::StatusOr<std::vector<TreeEntry>> all =
          OnThread<std::vector<TreeEntry>>([at = *root](Context& ctx) { return TreeEntries(ctx, at); });
      ASSERT_TRUE(all.ok()) << all.status();
      ASSERT_EQ(all->size(), model.size()) << "round " << round;
      size_t i = 0;
      for (const auto& [k, v] : model) {
        ASSERT_TRUE((*all)[i].key == k && (*all)[i].value == v) << "round " << round << " entry " << i;
        ++i;
      }
    }
  };
  rounds(0, 150);
  EXPECT_GT(model.size(), 100u) << "the rounds should have grown the tree several levels deep";
  // Drain it (inner nodes empty and leave, the root ends an empty leaf), then refill.
  absl::StatusOr<FatPtr> drained =
      OnThread<FatPtr>([at = *root, &model](Context& ctx) { return DrainTree(ctx, at, &model); });
  ASSERT_TRUE(drained.ok()) << drained.status();
  model.clear();
  root = drained;
  rounds(1000, 1020);
}

// Lists are indexed from their second block; tree nodes hold four entries. Random
// upserts (some moving a link to another time), hides, expunges and reads, checked
// against the model; every 150 operations each list's indexes are checked against it.
TEST_P(ListIndexTest, RandomOperationsOnIndexedListsMatchTheModel) {
  Start(ListIndexTuning{1, 4, 2});
  MemoryGraph model;
  std::mt19937_64 rng(GetParam() == "shm" ? 11 : 12);
  auto pick = [&](int n) { return static_cast<int64_t>(rng() % n); };
  const int kId2s = 300;
  auto check_lists = [&](int op) {
    for (int64_t id1 = 1; id1 <= 3; ++id1) {
      absl::StatusOr<ListSnapshot> list = g_->ReadList(static_cast<NodeId>(1 + (op + 3) % 3), id1, kDefaultLinkType);
      ASSERT_TRUE(list.ok()) << list.status();
      ASSERT_TRUE(list->index_check.ok()) << "op " << op << " id1 " << id1 << ": " << list->index_check;
      std::vector<int64_t> all(kId2s);
      for (int i = 0; i < kId2s; ++i) all[i] = i;
      std::vector<Link> expected = model.GetLinks(id1, kDefaultLinkType, all);
      std::vector<Link> got = list->links;
      auto by_id2 = [](const Link& a, const Link& b) { return a.id2 < b.id2; };
      std::sort(expected.begin(), expected.end(), by_id2);
      std::sort(got.begin(), got.end(), by_id2);
      ASSERT_EQ(got, expected) << "op " << op << " id1 " << id1;
      ASSERT_EQ(list->count, model.CountLinks(id1, kDefaultLinkType));
    }
  };
  for (int op = 0; op < 2400; ++op) {
    const NodeId on = static_cast<NodeId>(1 + pick(3));
    const int64_t id1 = 1 + pick(3);
    const int64_t id2 = pick(kId2s);
    const int kind = static_cast<int>(pick(100));
    SCOPED_TRACE(absl::StrCat("op ", op, " kind ", kind, " id1 ", id1, " id2 ", id2));
    if (kind < 55) {
      // Times mostly new (to the head), some anywhere (into the middle, moving links).
      const int64_t time = pick(4) == 0 ? pick(1000) : 1000 + op;
      Link l{id1, kDefaultLinkType, id2, pick(6) == 0 ? Visibility::kHidden : Visibility::kVisible,
             static_cast<int32_t>(pick(9)), time, std::string(static_cast<size_t>(pick(200)), static_cast<char>('a' + pick(26)))};
      absl::StatusOr<bool> got = g_->AddLink(on, l);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, *model.AddLink(l));
    } else if (kind < 70) {
      const bool expunge = pick(3) != 0;
      absl::StatusOr<bool> got = g_->DeleteLink(on, id1, kDefaultLinkType, id2, expunge);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, model.DeleteLink(id1, kDefaultLinkType, id2, expunge));
    } else if (kind < 85) {
      std::vector<int64_t> ids = {id2, pick(kId2s), pick(kId2s), id2};
      absl::StatusOr<std::vector<Link>> got = g_->GetLinks(on, id1, kDefaultLinkType, ids);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, model.GetLinks(id1, kDefaultLinkType, ids));
    } else {
      LinkRange r{id1, kDefaultLinkType, 0, INT64_MAX, static_cast<uint32_t>(pick(20)), static_cast<uint32_t>(1 + pick(60))};
      absl::StatusOr<std::vector<Link>> got = g_->GetLinkList(on, r);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, *model.GetLinkList(r));
    }
    if (op % 150 == 149) check_lists(op);
  }
  // Empty a list completely (its indexes go with it), then grow it again.
  for (int64_t id2 = 0; id2 < kId2s; ++id2) {
    ASSERT_EQ(*g_->DeleteLink(2, 1, kDefaultLinkType, id2, true), model.DeleteLink(1, kDefaultLinkType, id2, true));
  }
  EXPECT_EQ(*g_->CountLinks(3, 1, kDefaultLinkType), 0u);
  for (int64_t id2 = 0; id2 < 100; ++id2) {
    Link l{1, kDefaultLinkType, id2, Visibility::kVisible, 1, 5000 + id2, std::string(150, 'z')};
    ASSERT_EQ(*g_->AddLink(1, l), *model.AddLink(l));
  }
  check_lists(-1);
  const ClientStats stats = g_->TotalStats();
  EXPECT_GT(stats.index_builds, 3u);
  EXPECT_GT(stats.indexed_ops, 1000u);
}

// A hub loaded fast (appending, unindexed) gets its indexes at the end of its load (the
// load's last step asks its machine: kIndexList); after that an operation on one of its
// links reads a few tree nodes and blocks, not its thousands of blocks.
TEST_P(ListIndexTest, HubOperationsReadAFewObjects) {
  Start({});
  const int kLinks = getenv("GRAPH_HUB_LINKS") ? atoi(getenv("GRAPH_HUB_LINKS")) : 60000;
  std::mt19937_64 rng(5);
  MemoryGraph model;
  std::vector<Link> links;
  for (int i = 0; i < kLinks; ++i) {
    links.push_back(Link{9, kDefaultLinkType, 9 + i, Visibility::kVisible, 1, static_cast<int64_t>(rng() % 4'000'000),
                         std::string(rng() % 16, 'h')});
    ASSERT_TRUE(model.AddLink(links.back()).ok());
  }
  ASSERT_EQ(*g_->AddLinks(1, 9, kDefaultLinkType, links), static_cast<uint64_t>(kLinks));
  // (ReadList reads the whole list in one transaction, whose read set must fit one
  // message: up to about 100k links.)
  const bool small = kLinks <= 100000;
  EXPECT_EQ(g_->TotalStats().index_builds, 1u) << "the load's end indexes the long list it appended";
  // The first single-link operation finds the indexes there: it builds none.
  Link first{9, kDefaultLinkType, 5, Visibility::kVisible, 0, 4'500'000, "first"};
  const absl::Time first_start = absl::Now();
  ASSERT_EQ(*g_->AddLink(2, first), *model.AddLink(first));
  const absl::Duration first_op = absl::Now() - first_start;
  EXPECT_EQ(g_->TotalStats().index_builds, 1u);
  if (small) {
    absl::StatusOr<ListSnapshot> after = g_->ReadList(3, 9, kDefaultLinkType);
    ASSERT_TRUE(after.ok()) << after.status();
    ASSERT_TRUE(after->indexed);
    ASSERT_TRUE(after->index_check.ok()) << after->index_check;
  }
  const ClientStats start = g_->TotalStats();
  const absl::Time ops_start = absl::Now();
  const int kOps = 60;
  for (int i = 0; i < kOps; ++i) {
    const int64_t id2 = 9 + static_cast<int64_t>(rng() % (kLinks + 100));
    Link l{9, kDefaultLinkType, id2, Visibility::kVisible, 0, 4'600'000 + i, "new"};
    ASSERT_EQ(*g_->AddLink(1 + i % 3, l), *model.AddLink(l));
    const int64_t gone = 9 + static_cast<int64_t>(rng() % kLinks);
    ASSERT_EQ(*g_->DeleteLink(1 + (i + 1) % 3, 9, kDefaultLinkType, gone, i % 2 == 0),
              model.DeleteLink(9, kDefaultLinkType, gone, i % 2 == 0));
    std::vector<int64_t> ids = {id2, gone, 9 + static_cast<int64_t>(rng() % kLinks)};
    ASSERT_EQ(*g_->GetLinks(1 + (i + 2) % 3, 9, kDefaultLinkType, ids), model.GetLinks(9, kDefaultLinkType, ids));
  }
  const absl::Duration per_op = (absl::Now() - ops_start) / (3 * kOps);
  const ClientStats end = g_->TotalStats();
  const uint64_t ops = end.indexed_ops - start.indexed_ops;
  const double reads = static_cast<double>(end.indexed_reads - start.indexed_reads) / static_cast<double>(ops);
  std::cerr << "hub of " << kLinks << " links: the first operation (the list indexed by its load) " << first_op << "; then "
            << reads << " tree nodes and blocks read per link operation, " << per_op << " per operation\n";
  EXPECT_GE(ops, static_cast<uint64_t>(3 * kOps));
  // The list has ~1000 blocks; a lookup reads ~3 nodes of each tree, the link's block and
  // the head (a get of three id2s, about three times that).
  EXPECT_LT(reads, 40.0);
  EXPECT_EQ(*g_->CountLinks(3, 9, kDefaultLinkType), model.CountLinks(9, kDefaultLinkType));
  if (small) {
    absl::StatusOr<ListSnapshot> last = g_->ReadList(1, 9, kDefaultLinkType);
    ASSERT_TRUE(last.ok()) << last.status();
    EXPECT_TRUE(last->index_check.ok()) << last->index_check;
  }
  for (const LinkRange& r : {LinkRange{9, kDefaultLinkType}, LinkRange{9, kDefaultLinkType, 1'000'000, 2'000'000, 100, 50}}) {
    EXPECT_EQ(*g_->GetLinkList(3, r), *model.GetLinkList(r));
  }
}

// Sets the build lease of the list (id1, type) to end at `lease` (unix seconds), as a
// build does (or did, and died).
Task<absl::StatusOr<bool>> SetLease(Context& ctx, std::shared_ptr<const kv::ShardMap> index, int64_t id1,
                                    int64_t type, uint32_t lease) {
  ClientStats stats;
  co_return co_await RunTx<bool>(ctx, index, &stats, [id1, type, lease](TxScope& s) -> Task<absl::StatusOr<bool>> {
    absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
    if (!vertex.ok()) co_return vertex.status();
    ListHead* list = vertex->object != nullptr ? vertex->v.FindList(type) : nullptr;
    if (list == nullptr) co_return absl::NotFoundError("no such list");
    list->build_lease = lease;
    if (absl::Status st = co_await StoreVertex(s, *vertex); !st.ok()) co_return st;
    co_return true;
  });
}

// While a build holds a list's lease its writers wait (and readers do not); a lease
// left behind by a build that died holds them only until it runs out.
TEST_P(ListIndexTest, WritersWaitForABuildsLeaseUntilItEnds) {
  ASSERT_NO_FATAL_FAILURE(StartWithUnindexedList(3000));
  auto set_lease = [&](absl::Time until) {
    const uint32_t lease = static_cast<uint32_t>(absl::ToUnixSeconds(until));
    std::shared_ptr<const kv::ShardMap> index = g_->client(1).index_map();
    absl::StatusOr<bool> set = OnThread<bool>([index, lease](Context& ctx) {
      return SetLease(ctx, index, 5, kDefaultLinkType, lease);
    });
    ASSERT_TRUE(set.ok()) << set.status();
  };
  set_lease(absl::Now() + absl::Seconds(2));
  const absl::Time read_start = absl::Now();
  EXPECT_EQ(*g_->CountLinks(2, 5, kDefaultLinkType), 3000u);
  EXPECT_EQ(g_->GetLinks(3, 5, kDefaultLinkType, {7})->size(), 1u);
  EXPECT_LT(absl::Now() - read_start, absl::Seconds(1)) << "readers do not wait";
  const absl::Time write_start = absl::Now();
  EXPECT_TRUE(*g_->AddLink(2, Link{5, kDefaultLinkType, 5000, Visibility::kVisible, 1, 9000, "waited"}));
  const absl::Duration waited = absl::Now() - write_start;
  EXPECT_GE(waited, absl::Milliseconds(900)) << "a writer goes on only once the lease has run out";
  // A lease that has run out holds nobody.
  set_lease(absl::Now() - absl::Seconds(5));
  const absl::Time free_start = absl::Now();
  EXPECT_TRUE(*g_->DeleteLink(3, 5, kDefaultLinkType, 5000, false));
  EXPECT_LT(absl::Now() - free_start, absl::Seconds(1));
  EXPECT_EQ(*g_->CountLinks(1, 5, kDefaultLinkType), 3000u);
  std::cerr << "a writer waited " << waited << " for a lease of up to 2 s\n";
}

// The head of the list (id1, type), as its vertex holds it.
Task<absl::StatusOr<ListHead>> ReadListHead(Context& ctx, std::shared_ptr<const kv::ShardMap> index, int64_t id1,
                                            int64_t type) {
  ClientStats stats;
  co_return co_await RunTx<ListHead>(ctx, index, &stats, [id1, type](TxScope& s) -> Task<absl::StatusOr<ListHead>> {
    absl::StatusOr<VertexInTx> vertex = co_await ReadVertex(s, id1);
    if (!vertex.ok()) co_return vertex.status();
    const ListHead* list = vertex->object != nullptr ? vertex->v.FindList(type) : nullptr;
    if (list == nullptr) co_return absl::NotFoundError("no such list");
    co_return *list;
  });
}

// A build keeps its lease between its transactions: it renews one that ends within a
// second, leaves a longer one alone, and learns that it lost one another build took
// once it ran out (and then leaves that build's lease alone).
TEST_P(ListIndexTest, ABuildRenewsItsLeaseUntilAnotherBuildTakesIt) {
  ASSERT_NO_FATAL_FAILURE(StartWithUnindexedList(100));
  std::shared_ptr<const kv::ShardMap> index = g_->client(1).index_map();
  auto set_lease = [&](uint32_t lease) {
    absl::StatusOr<bool> set = OnThread<bool>([index, lease](Context& ctx) {
      return SetLease(ctx, index, 5, kDefaultLinkType, lease);
    });
    ASSERT_TRUE(set.ok()) << set.status();
  };
  auto read_lease = [&]() -> uint32_t {
    absl::StatusOr<ListHead> head = OnThread<ListHead>([index](Context& ctx) {
      return ReadListHead(ctx, index, 5, kDefaultLinkType);
    });
    EXPECT_TRUE(head.ok()) << head.status();
    return head.ok() ? head->build_lease : 0;
  };
  auto keep = [&](BuildLease* lease) -> absl::StatusOr<bool> {
    return OnThread<bool>([index, lease](Context& ctx) {
      return [](Context& ctx, std::shared_ptr<const kv::ShardMap> index, BuildLease* lease) -> Task<absl::StatusOr<bool>> {
        ClientStats stats;
        co_return co_await KeepBuildLease(ctx, index, &stats, lease);
      }(ctx, index, lease);
    });
  };
  auto unix_seconds = [](absl::Duration from_now) {
    return static_cast<uint32_t>(absl::ToUnixSeconds(absl::Now() + from_now));
  };

  // Less than a second left: renewed to at least 2 s from now, in the list too.
  BuildLease lease{5, kDefaultLinkType, unix_seconds(absl::ZeroDuration()) + 1};
  set_lease(lease.ends);
  const uint32_t at_least = unix_seconds(absl::Seconds(2));
  EXPECT_TRUE(*keep(&lease));
  EXPECT_GT(lease.ends, at_least);
  EXPECT_EQ(read_lease(), lease.ends);
  // Ten seconds left: nothing to do.
  lease.ends = unix_seconds(absl::Seconds(10));
  set_lease(lease.ends);
  const uint32_t long_lease = lease.ends;
  EXPECT_TRUE(*keep(&lease));
  EXPECT_EQ(lease.ends, long_lease);
  EXPECT_EQ(read_lease(), long_lease);
  // Ran out, and another build took the list: lost, and the other's lease stays.
  lease.ends = unix_seconds(-absl::Seconds(5));
  const uint32_t other = unix_seconds(absl::Seconds(2)) + 1;
  set_lease(other);
  EXPECT_FALSE(*keep(&lease));
  EXPECT_EQ(read_lease(), other);
  // No such list: lost.
  BuildLease gone{5, kDefaultLinkType + 1, unix_seconds(-absl::Seconds(5))};
  EXPECT_FALSE(*keep(&gone));
}

// A build that takes longer than its lease (paused after each part it reads) renews it:
// a writer that comes during the build waits until the build has linked its indexes,
// instead of changing the list under it once the first lease runs out (which wasted
// the build).
TEST_P(ListIndexTest, ABuildSlowerThanItsLeaseIsNotOvertakenByWriters) {
  ASSERT_NO_FATAL_FAILURE(StartWithUnindexedList(3000));
  std::shared_ptr<const kv::ShardMap> index = g_->client(1).index_map();
  absl::StatusOr<ListHead> head = OnThread<ListHead>([index](Context& ctx) {
    return ReadListHead(ctx, index, 5, kDefaultLinkType);
  });
  ASSERT_TRUE(head.ok()) << head.status();
  ASSERT_GE(head->blocks, 4u);
  ListIndexTuning slow;
  slow.min_blocks = 0;
  slow.blocks_per_read = 1;
  slow.build_pause = absl::Milliseconds(4000) / head->blocks;  // longer than a lease (2-3 s)

  absl::StatusOr<bool> built;
  const absl::Time build_start = absl::Now();
  absl::Time build_end;
  std::thread build([&] {
    built = OnThread<bool>([index, slow](Context& ctx) {
      return [](Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                ListIndexTuning slow) -> Task<absl::StatusOr<bool>> {
        ClientStats stats;
        co_return co_await BuildListIndex(ctx, index, &stats, 5, kDefaultLinkType, slow);
      }(ctx, index, slow);
    });
    build_end = absl::Now();
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_TRUE(*g_->AddLink(2, Link{5, kDefaultLinkType, 5000, Visibility::kVisible, 1, 9000, "waited"}));
  const absl::Time write_end = absl::Now();
  build.join();
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_TRUE(*built) << "the build was overtaken by the writer once its lease ran out";
  EXPECT_GE(build_end - build_start, absl::Seconds(3)) << "the build was meant to outlast its first lease";
  EXPECT_GE(write_end, build_end - absl::Milliseconds(50)) << "the writer went on before the build ended";
  absl::StatusOr<ListSnapshot> list = g_->ReadList(3, 5, kDefaultLinkType);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->indexed);
  EXPECT_TRUE(list->index_check.ok()) << list->index_check;
  EXPECT_EQ(list->count, 3001u);
  std::cerr << "a build of " << head->blocks << " blocks took " << (build_end - build_start) << "\n";
}

// Two requests to index one list that arrive together at its thread (the ends of two
// loads of it): the second waits for the build the first started, and both answer once
// the list has its indexes (kIndexList's contract: "the list has its indexes").
TEST_P(ListIndexTest, AnIndexRequestThatMeetsABuildOfItsListWaitsForIt) {
  ListIndexTuning slow;
  slow.blocks_per_read = 2;
  slow.build_pause = absl::Milliseconds(20);
  ASSERT_NO_FATAL_FAILURE(Start(slow));
  std::vector<Link> list;
  for (int i = 0; i < 250; ++i) {
    list.push_back(Link{5, kDefaultLinkType, i, Visibility::kVisible, 1, i, std::string(200, 'x')});
  }
  ASSERT_EQ(*g_->AddLinks(1, 5, kDefaultLinkType, list), 250u);
  absl::StatusOr<ListSnapshot> before = g_->ReadList(1, 5, kDefaultLinkType);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_FALSE(before->indexed) << "a load of at most kIndexAfterLoadLinks links asks for no indexes";
  using Answers = absl::StatusOr<std::vector<bool>>;
  Answers answers = g_->local().Run<Answers>(1, 0, [](GraphClient& c, auto finish) {
    struct Shared {
      std::vector<bool> indexed;
      int left;
      absl::Status failed;
      decltype(finish) done;
    };
    auto shared = std::make_shared<Shared>(Shared{std::vector<bool>(2), 2, {}, std::move(finish)});
    for (int k = 0; k < 2; ++k) {
      ShipRequest r;
      r.op = ShipOp::kIndexList;
      r.id1 = 5;
      r.type = kDefaultLinkType;
      c.Ship(std::move(r), [shared, k](absl::StatusOr<ShipReply> reply) {
        if (reply.ok()) shared->indexed[k] = reply->indexed;
        shared->failed.Update(reply.status());
        if (--shared->left == 0) shared->done(shared->failed.ok() ? Answers(shared->indexed) : shared->failed);
      });
    }
  });
  ASSERT_TRUE(answers.ok()) << answers.status();
  EXPECT_EQ(*answers, std::vector<bool>({true, true})) << "an index request answered before the list had its indexes";
  EXPECT_EQ(g_->TotalStats().index_builds, 1u);
  absl::StatusOr<ListSnapshot> after = g_->ReadList(1, 5, kDefaultLinkType);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->indexed);
  EXPECT_TRUE(after->index_check.ok()) << after->index_check;
}

INSTANTIATE_TEST_SUITE_P(Backends, ListIndexTest, ::testing::ValuesIn(farm::testing::TestBackends()));

}  // namespace
}  // namespace farm::graph::testing
