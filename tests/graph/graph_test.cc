// The graph store (Tao on FaRM) against LinkBench's contract: each operation from the
// API on a 3-node in-process cluster, and a differential test that runs random
// operations on the cluster and on MemoryGraph (the reference model) and compares every
// result.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "graph/memory_graph.h"
#include "gtest/gtest.h"
#include "tests/graph/graph_cluster.h"
#include "tests/support/fabric_test_util.h"

namespace farm::graph::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Link L(int64_t id1, int64_t id2, int64_t time, Visibility vis = Visibility::kVisible, std::string data = "d") {
  return Link{id1, kDefaultLinkType, id2, vis, 1, time, std::move(data)};
}

std::vector<int64_t> Id2s(const std::vector<Link>& links) {
  std::vector<int64_t> ids;
  for (const Link& l : links) ids.push_back(l.id2);
  return ids;
}

class GraphTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<GraphCluster>> g = GraphCluster::Start(GetParam(), 3, "graph_test");
    ASSERT_TRUE(g.ok()) << g.status();
    g_ = std::move(*g);
  }
  std::unique_ptr<GraphCluster> g_;
};

TEST_P(GraphTest, NodesHaveSequentialIdsTypesAndResets) {
  absl::StatusOr<int64_t> a = g_->AddNode(1, Node{0, 7, 1, 100, "alpha"});
  absl::StatusOr<int64_t> b = g_->AddNode(2, Node{0, 7, 1, 101, std::string("b\0\r\n", 4)});
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(*a, 1);
  EXPECT_EQ(*b, 2);
  // Seen from every node; the wrong type is no node.
  for (NodeId on : {1, 2, 3}) {
    absl::StatusOr<std::optional<Node>> n = g_->GetNode(on, 2, 7);
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_TRUE(n->has_value());
    EXPECT_EQ(**n, (Node{2, 7, 1, 101, std::string("b\0\r\n", 4)}));
    EXPECT_FALSE(g_->GetNode(on, 2, 8)->has_value());
    EXPECT_FALSE(g_->GetNode(on, 99, 7)->has_value());
  }
  EXPECT_FALSE(*g_->UpdateNode(3, Node{1, 8, 2, 200, "x"}));  // type differs
  EXPECT_TRUE(*g_->UpdateNode(3, Node{1, 7, 2, 200, "updated"}));
  EXPECT_EQ(**g_->GetNode(2, 1, 7), (Node{1, 7, 2, 200, "updated"}));
  EXPECT_FALSE(*g_->DeleteNode(1, 1, 8));
  EXPECT_TRUE(*g_->DeleteNode(1, 1, 7));
  EXPECT_FALSE(*g_->DeleteNode(1, 1, 7));
  EXPECT_FALSE(g_->GetNode(3, 1, 7)->has_value());
  EXPECT_FALSE(*g_->UpdateNode(3, Node{1, 7, 3, 300, "gone"}));
  // A load resets the ids.
  ASSERT_TRUE(g_->ResetNodeIds(2, 1000).ok());
  EXPECT_EQ(*g_->AddNode(3, Node{0, 7, 1, 1, "x"}), 1000);
  absl::StatusOr<int64_t> batch = g_->AddNodes(1, {Node{0, 7, 1, 1, "p"}, Node{0, 7, 1, 1, "q"}});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(*batch, 1001);
  EXPECT_EQ((*g_->GetNode(2, 1002, 7))->data, "q");
}

// A load's batch of nodes: consecutive ids, written over several transactions.
TEST_P(GraphTest, ALoadsBatchOfNodesGetsConsecutiveIds) {
  std::vector<Node> nodes;
  for (int i = 0; i < 700; ++i) nodes.push_back(Node{0, 2048, 1, i, std::string(i % 7 == 0 ? 5000 : 300, 'a' + i % 26)});
  absl::StatusOr<int64_t> first = g_->AddNodes(2, nodes);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, 1);
  for (int i = 0; i < 700; i += 37) {
    absl::StatusOr<std::optional<Node>> n = g_->GetNode(1 + i % 3, *first + i, 2048);
    ASSERT_TRUE(n.ok() && n->has_value()) << i;
    EXPECT_EQ((*n)->data, nodes[i].data);
    EXPECT_EQ((*n)->time, i);
  }
  EXPECT_EQ(*g_->AddNode(3, Node{0, 2048, 1, 1, "next"}), 701);
}

// Batches of 64 nodes of every inline size: each transaction's commit record fits one
// message (the split counts vertices as allocated and the id index's buckets).
TEST_P(GraphTest, BatchesOfNodesOfEveryInlineSizeFitTheirCommitRecords) {
  int64_t expected = 1;
  for (size_t bytes : {0, 100, 340, 700, 1000, 1500, 2048}) {
    std::vector<Node> nodes;
    for (int i = 0; i < 64; ++i) nodes.push_back(Node{0, 2048, 1, i, std::string(bytes, 'a' + i % 26)});
    absl::StatusOr<int64_t> first = g_->AddNodes(1 + bytes % 3, nodes);
    ASSERT_TRUE(first.ok()) << bytes << " bytes: " << first.status();
    EXPECT_EQ(*first, expected);
    absl::StatusOr<std::optional<Node>> last = g_->GetNode(2, *first + 63, 2048);
    ASSERT_TRUE(last.ok() && last->has_value()) << bytes;
    EXPECT_EQ((*last)->data, nodes[63].data);
    expected += 64;
  }
}

// A load into an id index filling up (displacements over many buckets, then chains):
// every batch's transactions still fit a message. LinkBench's 1M-node load failed at
// 70% of the index ("message of 66411 bytes exceeds the limit") when the batch was
// split by an estimate only; now a transaction stops adding nodes at a write budget.
TEST_P(GraphTest, ALoadIntoAFillingIdIndexFitsItsCommitRecords) {
  absl::StatusOr<std::unique_ptr<GraphCluster>> small =
      GraphCluster::Start(GetParam(), 3, "graph_full_index", 3, {}, /*index_buckets=*/64);
  ASSERT_TRUE(small.ok()) << small.status();
  std::vector<Node> nodes;
  for (int i = 0; i < 64; ++i) nodes.push_back(Node{0, 2048, 1, i, std::string(340, 'a' + i % 26)});
  int64_t expected = 1;
  for (int batch = 0; batch < 24; ++batch) {  // 1,536 ids in 768 slots
    absl::StatusOr<int64_t> first = (*small)->AddNodes(1 + batch % 3, nodes);
    ASSERT_TRUE(first.ok()) << "batch " << batch << ": " << first.status();
    EXPECT_EQ(*first, expected);
    expected += 64;
  }
  for (int64_t id = 1; id < expected; id += 61) {
    absl::StatusOr<std::optional<Node>> n = (*small)->GetNode(1 + id % 3, id, 2048);
    ASSERT_TRUE(n.ok() && n->has_value()) << id;
    EXPECT_EQ((*n)->data, nodes[(id - 1) % 64].data);
  }
}

// Writers on every node add nodes at once: every id is handed out once, and together
// they are one run of consecutive ids.
TEST_P(GraphTest, ConcurrentAddNodesGetDistinctConsecutiveIds) {
  std::vector<std::vector<int64_t>> ids(3);
  std::vector<std::thread> writers;
  for (NodeId on = 1; on <= 3; ++on) {
    writers.emplace_back([&, on] {
      for (int i = 0; i < 40; ++i) {
        absl::StatusOr<int64_t> id = g_->AddNode(on, Node{0, 5, 1, i, absl::StrCat("n", on, "-", i)});
        ASSERT_TRUE(id.ok()) << id.status();
        ids[on - 1].push_back(*id);
      }
    });
  }
  for (std::thread& w : writers) w.join();
  std::vector<int64_t> all;
  for (NodeId on = 1; on <= 3; ++on) {
    EXPECT_TRUE(std::is_sorted(ids[on - 1].begin(), ids[on - 1].end())) << "one writer's ids increase";
    all.insert(all.end(), ids[on - 1].begin(), ids[on - 1].end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 120u);
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int64_t>(i) + 1);
  for (NodeId on = 1; on <= 3; ++on) {
    EXPECT_EQ((*g_->GetNode(1 + on % 3, ids[on - 1][7], 5))->data, absl::StrCat("n", on, "-7"));
  }
}

struct LinkUpdateCase {
  bool add;
  Link link;
};

// Link updates of one vertex that one thread sends together run at the vertex's machine
// one at a time, in the order sent, those that waited together in one transaction
// (GraphClient::Execute): each answers what it would one after another, none conflicted
// with another (they used to run at once and retry with backoff, in any order), and
// there were fewer transactions than updates. `prefill` is loaded first; the lists of
// `types` are then compared whole with the model's, and each must be indexed as
// `indexed` says.
void SendTogetherAndCompare(GraphCluster& g, int64_t id1, const std::vector<Link>& prefill,
                            const std::vector<LinkUpdateCase>& updates, std::vector<int64_t> types, bool indexed) {
  MemoryGraph model;
  if (!prefill.empty()) {
    for (const Link& l : prefill) ASSERT_TRUE(model.AddLink(l).ok());
    absl::StatusOr<uint64_t> loaded = g.AddLinks(2, id1, prefill[0].type, prefill);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ASSERT_EQ(*loaded, prefill.size());
  }
  std::vector<bool> expected;
  for (const LinkUpdateCase& u : updates) {
    expected.push_back(u.add ? *model.AddLink(u.link) : model.DeleteLink(id1, u.link.type, u.link.id2, false));
  }
  const ClientStats before = g.TotalStats();
  using Results = absl::StatusOr<std::vector<bool>>;
  Results got = g.local().Run<Results>(1, 0, [&updates, id1](GraphClient& c, auto finish) {
    struct Shared {
      std::vector<bool> results;
      size_t left = 0;
      absl::Status failed;
      decltype(finish) done;
    };
    auto shared = std::make_shared<Shared>(Shared{std::vector<bool>(updates.size()), updates.size(), {}, std::move(finish)});
    for (size_t k = 0; k < updates.size(); ++k) {
      auto answered = [shared, k](absl::StatusOr<bool> r) {
        if (r.ok()) shared->results[k] = *r;
        shared->failed.Update(r.status());
        if (--shared->left == 0) shared->done(shared->failed.ok() ? Results(shared->results) : shared->failed);
      };
      const LinkUpdateCase& u = updates[k];
      if (u.add) {
        c.AddLink(u.link, std::move(answered));
      } else {
        c.DeleteLink(id1, u.link.type, u.link.id2, false, std::move(answered));
      }
    }
  });
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, expected);
  const ClientStats after = g.TotalStats();
  EXPECT_EQ(after.retries, before.retries) << "updates of one vertex conflicted with each other";
  EXPECT_LT(after.transactions - before.transactions, updates.size()) << "no updates were combined";
  std::vector<int64_t> id2s;
  for (const LinkUpdateCase& u : updates) id2s.push_back(u.link.id2);
  for (int64_t type : types) {
    // Read lock-free (GetLinkList), in transactions (GetLinks) and whole (ReadList): a
    // stale pointer anywhere in the list fails them.
    const LinkRange all{id1, type, 0, INT64_MAX, 0, 10000};
    absl::StatusOr<std::vector<Link>> range = g.GetLinkList(2, all);
    ASSERT_TRUE(range.ok()) << range.status();
    EXPECT_EQ(*range, *model.GetLinkList(all)) << "list type " << type;
    absl::StatusOr<std::vector<Link>> links = g.GetLinks(3, id1, type, id2s);
    ASSERT_TRUE(links.ok()) << links.status();
    EXPECT_EQ(*links, model.GetLinks(id1, type, id2s)) << "list type " << type;
    EXPECT_EQ(*g.CountLinks(3, id1, type), model.CountLinks(id1, type));
    absl::StatusOr<ListSnapshot> list = g.ReadList(1, id1, type);
    ASSERT_TRUE(list.ok()) << list.status();
    EXPECT_EQ(list->indexed, indexed && type == types.front()) << "list type " << type;
    EXPECT_TRUE(list->index_check.ok()) << list->index_check;
  }
}

// Upserts, deletes and re-adds of 5 links in two of the vertex's lists, after `prefill`
// links of the first (indexed when long).
void SendMixedTogetherAndCompare(GraphCluster& g, int64_t id1, int prefill) {
  std::vector<Link> links;
  for (int i = 0; i < prefill; ++i) links.push_back(L(id1, 10000 + i, 1000 + i, Visibility::kVisible, "p"));
  std::vector<LinkUpdateCase> updates;
  for (int i = 0; i < 24; ++i) {
    Link link = L(id1, 100 + i % 5, i, i % 3 == 0 ? Visibility::kHidden : Visibility::kVisible, absl::StrCat("v", i));
    link.type = kDefaultLinkType + (i % 7 == 6 ? 1 : 0);
    updates.push_back({true, link});
    if (i % 4 == 3) updates.push_back({false, link});
  }
  SendTogetherAndCompare(g, id1, links, updates, {kDefaultLinkType, kDefaultLinkType + 1}, prefill > 0);
}

TEST_P(GraphTest, LinkUpdatesOfOneVertexSentTogetherRunInOrderAndCombined) {
  SendMixedTogetherAndCompare(*g_, 7, 0);
}

TEST_P(GraphTest, LinkUpdatesOfAnIndexedListSentTogetherRunInOrderAndCombined) {
  SendMixedTogetherAndCompare(*g_, 8, 3000);
}

// New links that go first into a list whose head block is full, sent together: the
// first makes a new head and renames the old one (layout.h, invariant 2), the next ones
// change that new head in the same transaction. Every pointer the transaction writes
// to the old head must carry its new name (a combined batch once wrote the old one into
// the new head's next pointer: the list could no longer be read).
void NewestFirstIntoAFullHead(GraphCluster& g, int64_t id1, int prefill, int count = 12, size_t data = 150) {
  std::vector<Link> links;
  for (int i = 0; i < prefill; ++i) links.push_back(L(id1, 10000 + i, 1000 + i, Visibility::kVisible, std::string(20, 'p')));
  // The first update sent runs alone (the others wait for it, then go together): one of
  // another list, so that the first of the batch is the one that makes the new head.
  Link other = L(id1, 1, 1);
  other.type = kDefaultLinkType + 1;
  std::vector<LinkUpdateCase> updates{{true, other}};
  for (int i = 0; i < count; ++i) {
    updates.push_back({true, L(id1, 500 + i, 100000 + i, Visibility::kVisible, std::string(data + i % 8, 'n'))});
    if (i % 5 == 4) updates.push_back({false, updates[updates.size() - 3].link});
  }
  SendTogetherAndCompare(g, id1, links, updates, {kDefaultLinkType, kDefaultLinkType + 1}, prefill > 1000);
}

TEST_P(GraphTest, NewestLinksIntoAFullHeadSentTogetherKeepTheListReadable) {
  NewestFirstIntoAFullHead(*g_, 12, 500);  // a load (over kMaxShippedEdgeBytes): 6 full blocks, unindexed
}

// A combined transaction whose commit outcome is unknown (here: it committed, and the
// commit seam says "outcome unknown") answers every update it carried with that error;
// none runs again. (They were put back in the queue and run again: an upsert then
// answered "not new" and a delete "not found", effects of their own first run, and an
// update of another client in between could have been undone.)
TEST_P(GraphTest, CombinedLinkUpdatesWhoseCommitOutcomeIsUnknownAreAnsweredWithItsError) {
  auto unknown = std::make_shared<std::atomic<int>>(0);
  for (NodeId n = 1; n <= 3; ++n) {
    for (size_t t = 0; t < g_->local().graph(n).threads(); ++t) {
      g_->client(n, t).set_combined_commit_for_test([unknown](Tx& tx) -> Task<absl::Status> {
        absl::Status s = co_await TxCommit(tx);
        if (s.ok() && unknown->fetch_add(1) == 0) co_return absl::DeadlineExceededError("outcome unknown: the test's");
        co_return s;
      });
    }
  }
  constexpr int64_t id1 = 21;
  Link other = L(id1, 1, 1);
  other.type = kDefaultLinkType + 1;
  // The first runs alone (another list); the three behind it wait, then go together.
  const std::vector<LinkUpdateCase> updates{
      {true, other}, {true, L(id1, 100, 5)}, {true, L(id1, 101, 6)}, {false, L(id1, 100, 5)}};
  using Answers = std::vector<absl::StatusOr<bool>>;
  absl::StatusOr<Answers> all_answers = g_->local().Run<absl::StatusOr<Answers>>(1, 0, [&updates](GraphClient& c, auto finish) {
    struct Shared {
      Answers answers;
      size_t left = 0;
      decltype(finish) done;
    };
    auto shared = std::make_shared<Shared>(Shared{Answers(updates.size(), absl::UnknownError("unanswered")),
                                                  updates.size(), std::move(finish)});
    for (size_t k = 0; k < updates.size(); ++k) {
      auto answered = [shared, k](absl::StatusOr<bool> r) {
        shared->answers[k] = std::move(r);
        if (--shared->left == 0) shared->done(std::move(shared->answers));
      };
      const Link& l = updates[k].link;
      if (updates[k].add) {
        c.AddLink(l, std::move(answered));
      } else {
        c.DeleteLink(l.id1, l.type, l.id2, false, std::move(answered));
      }
    }
  });
  ASSERT_TRUE(all_answers.ok()) << all_answers.status();
  const Answers& got = *all_answers;
  ASSERT_EQ(got.size(), updates.size());
  ASSERT_TRUE(got[0].ok()) << got[0].status();
  EXPECT_TRUE(*got[0]);
  for (size_t k = 1; k < got.size(); ++k) {
    EXPECT_EQ(got[k].status().code(), absl::StatusCode::kDeadlineExceeded) << "update " << k << ": " << got[k].status();
  }
  EXPECT_EQ(unknown->load(), 1) << "one combined transaction of the three";
  // It did commit, once: 100 added then hidden, 101 added.
  const LinkRange all{id1, kDefaultLinkType, 0, INT64_MAX, 0, 10000};
  absl::StatusOr<std::vector<Link>> range = g_->GetLinkList(2, all);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_THAT(Id2s(*range), ElementsAre(101));
  EXPECT_EQ(*g_->CountLinks(3, id1, kDefaultLinkType), 1u);
  absl::StatusOr<std::vector<Link>> hidden = g_->GetLinks(2, id1, kDefaultLinkType, {100});
  ASSERT_TRUE(hidden.ok()) << hidden.status();
  ASSERT_EQ(hidden->size(), 1u);
  EXPECT_EQ((*hidden)[0].visibility, Visibility::kHidden);
}

TEST_P(GraphTest, NewestLinksIntoTheFullHeadOfAnIndexedListSentTogetherKeepItReadable) {
  NewestFirstIntoAFullHead(*g_, 13, 3000);
  // Enough to fill the new head within the batch too: it is renamed in the transaction
  // that made it.
  NewestFirstIntoAFullHead(*g_, 14, 3000, 26, 240);
}

TEST_P(GraphTest, NodeDataUpToOneMebibyteAndNoMore) {
  std::string big(kMaxNodeDataBytes, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  absl::StatusOr<int64_t> id = g_->AddNode(1, Node{0, 1, 1, 1, big});
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<std::optional<Node>> n = g_->GetNode(2, *id, 1);
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_TRUE(n->has_value());
  EXPECT_TRUE((*n)->data == big);
  // Back to inline, then to chunks of another size.
  ASSERT_TRUE(*g_->UpdateNode(3, Node{*id, 1, 2, 2, "small"}));
  EXPECT_EQ((*g_->GetNode(1, *id, 1))->data, "small");
  ASSERT_TRUE(*g_->UpdateNode(3, Node{*id, 1, 3, 3, big.substr(0, 100000)}));
  EXPECT_TRUE((*g_->GetNode(1, *id, 1))->data == big.substr(0, 100000));

  absl::StatusOr<int64_t> over = g_->AddNode(1, Node{0, 1, 1, 1, big + "x"});
  EXPECT_TRUE(absl::IsInvalidArgument(over.status())) << over.status();
  absl::StatusOr<bool> link = g_->AddLink(1, L(1, 2, 3, Visibility::kVisible, std::string(256, 'x')));
  EXPECT_TRUE(absl::IsInvalidArgument(link.status())) << link.status();
  EXPECT_TRUE(g_->AddLink(1, L(1, 2, 3, Visibility::kVisible, std::string(255, 'x'))).ok());
}

// One batch of nodes over the inline size (their chunks written several nodes at once,
// more nodes than go at once) between inline ones: each node gets its own data back.
TEST_P(GraphTest, ABatchOfChunkedAndInlineNodesKeepsEachNodesData) {
  std::vector<Node> nodes;
  for (int i = 0; i < 41; ++i) {
    const size_t bytes = i % 2 == 0 ? kMaxInlineNodeData + 1 + 997 * static_cast<size_t>(i) : 10 + i;
    std::string data(bytes, '\0');
    for (size_t b = 0; b < bytes; ++b) data[b] = static_cast<char>(b * 13 + static_cast<size_t>(i));
    nodes.push_back(Node{0, 3, 1, i, std::move(data)});
  }
  absl::StatusOr<int64_t> first = g_->AddNodes(1, nodes);
  ASSERT_TRUE(first.ok()) << first.status();
  for (int i = 0; i < 41; ++i) {
    absl::StatusOr<std::optional<Node>> n = g_->GetNode(1 + i % 3, *first + i, 3);
    ASSERT_TRUE(n.ok() && n->has_value()) << i;
    EXPECT_TRUE((*n)->data == nodes[i].data) << "node " << i << " of " << nodes[i].data.size() << " bytes";
    EXPECT_EQ((*n)->time, i);
  }
}

TEST_P(GraphTest, CountsFollowVisibilityThroughAddHideDeleteReAdd) {
  EXPECT_EQ(*g_->CountLinks(1, 5, kDefaultLinkType), 0u);
  EXPECT_TRUE(*g_->AddLink(1, L(5, 10, 100)));
  EXPECT_TRUE(*g_->AddLink(2, L(5, 11, 200)));
  EXPECT_FALSE(*g_->AddLink(3, L(5, 10, 100, Visibility::kVisible, "again")));  // upsert
  EXPECT_EQ(*g_->CountLinks(1, 5, kDefaultLinkType), 2u);
  EXPECT_TRUE(*g_->DeleteLink(2, 5, kDefaultLinkType, 10, false));  // hidden
  EXPECT_EQ(*g_->CountLinks(3, 5, kDefaultLinkType), 1u);
  EXPECT_TRUE(*g_->DeleteLink(2, 5, kDefaultLinkType, 10, false));  // hidden already: found, no change
  EXPECT_EQ(*g_->CountLinks(3, 5, kDefaultLinkType), 1u);
  // Hidden links: returned by GetLinks, not by GetLinkList.
  std::vector<Link> got = *g_->GetLinks(1, 5, kDefaultLinkType, {10, 11, 12});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].visibility, Visibility::kHidden);
  EXPECT_EQ(got[0].data, "again");
  EXPECT_THAT(Id2s(*g_->GetLinkList(1, LinkRange{5, kDefaultLinkType})), ElementsAre(11));
  // Re-adding a hidden link makes it visible again, without a new link.
  EXPECT_FALSE(*g_->AddLink(1, L(5, 10, 300)));
  EXPECT_EQ(*g_->CountLinks(2, 5, kDefaultLinkType), 2u);
  EXPECT_THAT(Id2s(*g_->GetLinkList(3, LinkRange{5, kDefaultLinkType})), ElementsAre(10, 11));
  // Adding a hidden link counts nothing; expunging removes it for good.
  EXPECT_TRUE(*g_->AddLink(1, L(5, 12, 50, Visibility::kHidden)));
  EXPECT_EQ(*g_->CountLinks(2, 5, kDefaultLinkType), 2u);
  EXPECT_TRUE(*g_->DeleteLink(3, 5, kDefaultLinkType, 11, true));
  EXPECT_EQ(*g_->CountLinks(2, 5, kDefaultLinkType), 1u);
  EXPECT_FALSE(*g_->DeleteLink(3, 5, kDefaultLinkType, 11, true));
  EXPECT_THAT(Id2s(*g_->GetLinks(1, 5, kDefaultLinkType, {11, 12, 12})), ElementsAre(12));
  EXPECT_FALSE(*g_->DeleteLink(3, 77, kDefaultLinkType, 11, true));  // no such list
  // Another type is another list.
  EXPECT_EQ(*g_->CountLinks(1, 5, kDefaultLinkType + 1), 0u);
}

TEST_P(GraphTest, LinkListsAreNewestFirstWithTimeRangeOffsetAndLimit) {
  std::vector<Link> links;
  for (int i = 0; i < 300; ++i) links.push_back(L(9, 1000 + i, (i * 37) % 500, Visibility::kVisible, std::string(i % 40, 'a')));
  ASSERT_EQ(*g_->AddLinks(1, 9, kDefaultLinkType, links), 300u);
  MemoryGraph model;
  for (const Link& l : links) ASSERT_TRUE(model.AddLink(l).ok());
  for (const LinkRange& r : {LinkRange{9, kDefaultLinkType}, LinkRange{9, kDefaultLinkType, 100, 200, 0, 10000},
                             LinkRange{9, kDefaultLinkType, 0, INT64_MAX, 7, 25}, LinkRange{9, kDefaultLinkType, 450, 460, 1, 3},
                             LinkRange{9, kDefaultLinkType, 0, INT64_MAX, 299, 10}, LinkRange{9, kDefaultLinkType, 0, INT64_MAX, 0, 0}}) {
    for (NodeId on : {1, 2, 3}) {
      absl::StatusOr<std::vector<Link>> page = g_->GetLinkList(on, r);
      ASSERT_TRUE(page.ok()) << page.status();
      EXPECT_EQ(*page, *model.GetLinkList(r)) << "offset " << r.offset << " limit " << r.limit;
    }
  }
  EXPECT_TRUE(absl::IsInvalidArgument(g_->GetLinkList(1, LinkRange{9, kDefaultLinkType, 0, INT64_MAX, 0, 10001}).status()));
  EXPECT_EQ(*g_->CountLinks(2, 9, kDefaultLinkType), 300u);
}

// LinkBench's load always makes a hub (961,964 links at 10k nodes): a list of 100k
// links, loaded in one AddLinks call, then used like any other.
TEST_P(GraphTest, HubListOfAHundredThousandLinks) {
  const int kLinks = getenv("GRAPH_HUB_LINKS") ? atoi(getenv("GRAPH_HUB_LINKS")) : 100000;
  std::mt19937_64 rng(7);
  std::vector<Link> links;
  MemoryGraph model;
  for (int i = 0; i < kLinks; ++i) {
    links.push_back(L(42, 42 + i, static_cast<int64_t>(rng() % 4'000'000), Visibility::kVisible, std::string(rng() % 16, 'h')));
    ASSERT_TRUE(model.AddLink(links.back()).ok());
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<uint64_t> added = g_->AddLinks(1, 42, kDefaultLinkType, links);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, static_cast<uint64_t>(kLinks));
  const absl::Duration load = absl::Now() - start;
  EXPECT_EQ(*g_->CountLinks(2, 42, kDefaultLinkType), static_cast<uint64_t>(kLinks));
  // The first operation on one link walks the list and has it indexed (list_index.h).
  const absl::Time first_start = absl::Now();
  ASSERT_EQ(*g_->GetLinks(1, 42, kDefaultLinkType, {42}), model.GetLinks(42, kDefaultLinkType, {42}));
  const absl::Duration first = absl::Now() - first_start;
  if (kLinks <= 100000) {  // (one transaction reads it all: its read set must fit a message)
    absl::StatusOr<ListSnapshot> list = g_->ReadList(2, 42, kDefaultLinkType);
    ASSERT_TRUE(list.ok()) << list.status();
    EXPECT_TRUE(list->indexed);
    EXPECT_TRUE(list->index_check.ok()) << list->index_check;
  }
  // Single operations on the hub, checked against the model.
  const absl::Time ops_start = absl::Now();
  for (int i = 0; i < 20; ++i) {
    const int64_t id2 = 42 + static_cast<int64_t>(rng() % (kLinks + 100));
    Link l = L(42, id2, 5'000'000 + i, Visibility::kVisible, "new");
    ASSERT_EQ(*g_->AddLink(3, l), *model.AddLink(l));
    const int64_t gone = 42 + static_cast<int64_t>(rng() % kLinks);
    ASSERT_EQ(*g_->DeleteLink(1, 42, kDefaultLinkType, gone, i % 2 == 0), model.DeleteLink(42, kDefaultLinkType, gone, i % 2 == 0));
    std::vector<int64_t> ids = {id2, gone, 42 + static_cast<int64_t>(rng() % kLinks)};
    ASSERT_EQ(*g_->GetLinks(2, 42, kDefaultLinkType, ids), model.GetLinks(42, kDefaultLinkType, ids));
  }
  const absl::Duration per_op = (absl::Now() - ops_start) / 20;
  EXPECT_EQ(*g_->CountLinks(2, 42, kDefaultLinkType), model.CountLinks(42, kDefaultLinkType));
  for (const LinkRange& r : {LinkRange{42, kDefaultLinkType}, LinkRange{42, kDefaultLinkType, 1'000'000, 2'000'000, 100, 50}}) {
    absl::StatusOr<std::vector<Link>> page = g_->GetLinkList(3, r);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(*page, *model.GetLinkList(r));
  }
  std::cerr << "hub of " << kLinks << " links loaded in " << load << "; the first get of one link (walk and index build) "
            << first << "; then add+delete+get of one link " << per_op << "\n";
}

// A load appends to the tail only while nothing else changes the list; otherwise (a
// list that has links, a second load at once, repeated id2s) the links are upserts.
TEST_P(GraphTest, LoadsFallBackToUpsertsWhenTheListIsNotTheirs) {
  auto make = [](int64_t id1, int from, int n, int64_t time0, std::string data) {
    std::vector<Link> links;
    for (int i = 0; i < n; ++i) links.push_back(L(id1, from + i, time0 + (i * 7919) % 5000, Visibility::kVisible, data));
    return links;
  };
  MemoryGraph model;
  // Into a list that has links already (some of the load's id2s among them, hidden).
  for (const Link& l : {L(7, 5, 100, Visibility::kHidden), L(7, 3000, 9999)}) {
    ASSERT_TRUE(*g_->AddLink(1, l));
    ASSERT_TRUE(*model.AddLink(l));
  }
  std::vector<Link> load = make(7, 0, 2000, 0, std::string(20, 'x'));
  ASSERT_EQ(*g_->AddLinks(2, 7, kDefaultLinkType, load), 1999u);
  for (const Link& l : load) (void)model.AddLink(l);
  // Two loads of one list from two nodes at once, overlapping id2s.
  std::vector<Link> a = make(8, 0, 3000, 0, std::string(10, 'a'));
  std::vector<Link> b = make(8, 1500, 3000, 2000, std::string(10, 'b'));
  std::thread other([&] {
    absl::StatusOr<uint64_t> r = g_->AddLinks(3, 8, kDefaultLinkType, b);
    EXPECT_TRUE(r.ok()) << r.status();
  });
  ASSERT_TRUE(g_->AddLinks(1, 8, kDefaultLinkType, a).ok());
  other.join();
  // The model cannot know which load won each shared id2: compare what cannot differ.
  std::vector<int64_t> ids;
  for (int i = 0; i < 4500; ++i) ids.push_back(i);
  absl::StatusOr<std::vector<Link>> got = g_->GetLinks(2, 8, kDefaultLinkType, ids);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 4500u);
  EXPECT_EQ(*g_->CountLinks(3, 8, kDefaultLinkType), 4500u);
  absl::StatusOr<std::vector<Link>> page = g_->GetLinkList(1, LinkRange{8, kDefaultLinkType});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->size(), 4500u);
  EXPECT_TRUE(std::is_sorted(page->begin(), page->end(),
                             [](const Link& x, const Link& y) { return EdgeBefore(x.time, x.id2, y.time, y.id2); }));
  // A load into the list of an id that has a node (a vertex without that list yet).
  absl::StatusOr<int64_t> node = g_->AddNode(1, Node{0, 1, 1, 1, "n"});
  ASSERT_TRUE(node.ok()) << node.status();
  std::vector<Link> onto_node = make(*node, 0, 1000, 0, std::string(20, 'n'));
  ASSERT_EQ(*g_->AddLinks(2, *node, kDefaultLinkType, onto_node), 1000u);
  EXPECT_EQ(*g_->CountLinks(3, *node, kDefaultLinkType), 1000u);
  EXPECT_EQ((*g_->GetNode(3, *node, 1))->data, "n");
  // Repeated id2s in one call: in order, the last one wins.
  std::vector<Link> repeated = make(9, 0, 1500, 0, "r");
  repeated.push_back(L(9, 3, 77777, Visibility::kHidden, "last"));
  ASSERT_EQ(*g_->AddLinks(1, 9, kDefaultLinkType, repeated), 1500u);
  for (const Link& l : repeated) (void)model.AddLink(l);
  for (int64_t id1 : {7, 9}) {
    EXPECT_EQ(*g_->CountLinks(2, id1, kDefaultLinkType), model.CountLinks(id1, kDefaultLinkType));
    EXPECT_EQ(*g_->GetLinkList(3, LinkRange{id1, kDefaultLinkType}), *model.GetLinkList(LinkRange{id1, kDefaultLinkType}));
  }
}

// A bulk load's batch (LoadLinkLists, LinkBench's addBulkLinks): lists of ids with and
// without nodes, both types of an id, hidden links, empty lists, a list with a
// repeated id2 and one too long to go with the others, shipped in groups and applied
// several to a transaction; then the same batch again under another token (the lists
// are not empty: upserts). Every list, count and node is the model's.
TEST_P(GraphTest, BulkLoadsOfManyListsMatchTheModel) {
  constexpr int64_t kType2 = kDefaultLinkType + 1;
  std::mt19937_64 rng(11);
  MemoryGraph model;
  ASSERT_TRUE(g_->ResetNodeIds(1, 1).ok());
  std::vector<Node> nodes;
  for (int i = 0; i < 150; ++i) nodes.push_back(Node{0, 2048, 1, i, std::string(rng() % 300, 'a' + i % 26)});
  ASSERT_EQ(*g_->AddNodes(2, nodes), 1);
  std::vector<LinkList> lists;
  uint64_t links = 0;
  for (int64_t id1 = 1; id1 <= 300; ++id1) {  // ids 151..300 have no node
    for (int64_t type : {kDefaultLinkType, kType2}) {
      LinkList list{id1, type, {}};
      const int n = static_cast<int>(rng() % 12);
      for (int j = 0; j < n; ++j) {
        const Visibility vis = rng() % 5 == 0 ? Visibility::kHidden : Visibility::kVisible;
        list.links.push_back(Link{id1, type, id1 + j, vis, 0, static_cast<int64_t>(rng() % 100000),
                                  std::string(rng() % 256, 'l')});
      }
      links += list.links.size();
      lists.push_back(std::move(list));
    }
  }
  LinkList repeated{301, kDefaultLinkType, {L(301, 5, 10), L(301, 6, 20), L(301, 5, 30, Visibility::kHidden, "2nd")}};
  LinkList hub{302, kDefaultLinkType, {}};
  for (int j = 0; j < 2000; ++j) hub.links.push_back(L(302, j, static_cast<int64_t>(rng() % 100000), Visibility::kVisible, "hub"));
  links += 2 + hub.links.size();
  lists.push_back(repeated);
  lists.push_back(hub);
  std::shuffle(lists.begin(), lists.end(), rng);
  for (const LinkList& list : lists) {
    for (const Link& l : list.links) ASSERT_TRUE(model.AddLink(l).ok());
  }
  const uint64_t transactions = g_->TotalStats().transactions;
  absl::StatusOr<uint64_t> added = g_->LoadLinkLists(3, lists, 0x1234);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, links);
  // Several lists to a transaction (602 lists, one to a transaction before).
  EXPECT_LT(g_->TotalStats().transactions - transactions, lists.size() / 5);
  auto check = [&](const char* when) {
    for (int64_t id1 = 1; id1 <= 302; ++id1) {
      for (int64_t type : {kDefaultLinkType, kType2}) {
        EXPECT_EQ(*g_->CountLinks(1 + id1 % 3, id1, type), model.CountLinks(id1, type)) << when << " " << id1;
        EXPECT_EQ(*g_->GetLinkList(1 + id1 % 3, LinkRange{id1, type}), *model.GetLinkList(LinkRange{id1, type}))
            << when << " " << id1;
      }
    }
    for (int64_t id = 1; id <= 150; id += 7) EXPECT_EQ((*g_->GetNode(2, id, 2048))->data, nodes[id - 1].data) << when;
    EXPECT_FALSE(g_->GetNode(2, 151, 2048)->has_value());
  };
  check("first load");
  // Again, under another load's token: every list has links, so all are upserts (the
  // same links: nothing new, nothing changes).
  absl::StatusOr<uint64_t> again = g_->LoadLinkLists(1, lists, 0x5678);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0u);
  check("second load");
  EXPECT_EQ(*g_->LoadLinkLists(2, {}, 0x9abc), 0u);
}

// Loaders on every node at once, into lists of ids without nodes (each list's
// transaction makes its vertex: index inserts) in a small index (buckets shared by
// many ids, chains), the loaders' ids interleaved: their transactions conflict. Every
// batch gets through, every list and count as loaded.
TEST_P(GraphTest, ConcurrentBulkLoadsIntoASmallIndexAllGetThrough) {
  absl::StatusOr<std::unique_ptr<GraphCluster>> small =
      GraphCluster::Start(GetParam(), 3, "graph_bulk_conflicts", 3, {}, /*index_buckets=*/64);
  ASSERT_TRUE(small.ok()) << small.status();
  constexpr int kLoaders = 3, kBatches = 4, kIdsPerBatch = 150;
  std::vector<std::thread> loaders;
  for (int k = 0; k < kLoaders; ++k) {
    loaders.emplace_back([&, k] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<LinkList> lists;
        for (int i = 0; i < kIdsPerBatch; ++i) {
          const int64_t id1 = 1 + (b * kIdsPerBatch + i) * kLoaders + k;  // loaders interleave
          for (int64_t type : {kDefaultLinkType, kDefaultLinkType + 1}) {
            lists.push_back(LinkList{id1, type, {L(id1, 1, 10, Visibility::kVisible, "a"), L(id1, 2, 20, Visibility::kHidden, "b"),
                                                 L(id1, 3, 30, Visibility::kVisible, "c")}});
            for (Link& l : lists.back().links) l.type = type;
          }
        }
        absl::StatusOr<uint64_t> added = (*small)->LoadLinkLists(1 + k, std::move(lists), 0x100 + k);
        ASSERT_TRUE(added.ok()) << "loader " << k << " batch " << b << ": " << added.status();
        EXPECT_EQ(*added, 3u * 2 * kIdsPerBatch);
      }
    });
  }
  for (std::thread& t : loaders) t.join();
  for (int64_t id1 = 1; id1 <= kLoaders * kBatches * kIdsPerBatch; id1 += 17) {
    EXPECT_EQ(*(*small)->CountLinks(1 + id1 % 3, id1, kDefaultLinkType + 1), 2u) << id1;
    absl::StatusOr<std::vector<Link>> page = (*small)->GetLinkList(1 + id1 % 3, LinkRange{id1, kDefaultLinkType});
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(page->size(), 2u) << id1;
    EXPECT_EQ((*page)[0].id2, 3);
    EXPECT_EQ((*page)[1].id2, 1);
  }
}

// A load's step carries up to kMaxShippedLoadEdgeBytes of edges: with the largest link
// data, onto a vertex with the largest inline node, its commit record still fits one
// message.
TEST_P(GraphTest, LoadStepsOfTheLargestLinksFitTheirCommitRecords) {
  ASSERT_TRUE(g_->ResetNodeIds(1, 1).ok());
  ASSERT_EQ(*g_->AddNode(1, Node{0, 2048, 1, 1, std::string(kMaxInlineNodeData, 'n')}), 1);
  std::vector<Link> links;
  MemoryGraph model;
  for (int j = 0; j < 1000; ++j) {  // about 7 steps
    links.push_back(L(1, 10 + j, 1'000'000 - j, Visibility::kVisible, std::string(kMaxLinkDataBytes, 'x')));
    ASSERT_TRUE(model.AddLink(links.back()).ok());
  }
  absl::StatusOr<uint64_t> added = g_->AddLinks(2, 1, kDefaultLinkType, links);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 1000u);
  EXPECT_EQ(*g_->CountLinks(3, 1, kDefaultLinkType), 1000u);
  EXPECT_EQ(*g_->GetLinkList(3, LinkRange{1, kDefaultLinkType}), *model.GetLinkList(LinkRange{1, kDefaultLinkType}));
  EXPECT_EQ((*g_->GetNode(3, 1, 2048))->data, std::string(kMaxInlineNodeData, 'n'));
}

// Random operations on the cluster and on the model, from random nodes; every result
// must be the model's. Lists grow past one block, split, lose blocks and move links.
TEST_P(GraphTest, RandomOperationsMatchTheModel) {
  MemoryGraph model;
  std::mt19937_64 rng(GetParam() == "shm" ? 1 : 2);
  auto pick = [&](int n) { return static_cast<int64_t>(rng() % n); };
  for (int op = 0; op < 3000; ++op) {
    const NodeId on = static_cast<NodeId>(1 + pick(3));
    const int64_t id1 = 1 + pick(4);
    const int64_t type = kDefaultLinkType + pick(2);
    const int64_t id2 = pick(120);
    const int kind = static_cast<int>(pick(100));
    SCOPED_TRACE(absl::StrCat("op ", op, " kind ", kind, " id1 ", id1, " id2 ", id2));
    if (kind < 40) {
      Link l{id1, type, id2, pick(5) == 0 ? Visibility::kHidden : Visibility::kVisible,
             static_cast<int32_t>(pick(9)), pick(50), std::string(static_cast<size_t>(pick(60)), static_cast<char>('a' + pick(26)))};
      absl::StatusOr<bool> got = g_->AddLink(on, l);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, *model.AddLink(l));
    } else if (kind < 55) {
      const bool expunge = pick(2) == 0;
      absl::StatusOr<bool> got = g_->DeleteLink(on, id1, type, id2, expunge);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, model.DeleteLink(id1, type, id2, expunge));
    } else if (kind < 65) {
      std::vector<int64_t> ids = {id2, pick(120), pick(120)};
      absl::StatusOr<std::vector<Link>> got = g_->GetLinks(on, id1, type, ids);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, model.GetLinks(id1, type, ids));
    } else if (kind < 90) {
      LinkRange r{id1, type, pick(3) == 0 ? pick(30) : 0, pick(3) == 0 ? 20 + pick(30) : INT64_MAX,
                  static_cast<uint32_t>(pick(4) == 0 ? pick(20) : 0), static_cast<uint32_t>(pick(3) == 0 ? 1 + pick(15) : 10000)};
      absl::StatusOr<std::vector<Link>> got = g_->GetLinkList(on, r);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, *model.GetLinkList(r));
    } else {
      absl::StatusOr<uint64_t> got = g_->CountLinks(on, id1, type);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, model.CountLinks(id1, type));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GraphTest, ::testing::ValuesIn(farm::testing::TestBackends()));

}  // namespace
}  // namespace farm::graph::testing
