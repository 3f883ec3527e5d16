// LinkBench's contract (graph/store.h, tools/linkbench/backend.h) as parameterized
// test cases, included by each test binary that instantiates them for its backends:
//   INSTANTIATE_TEST_SUITE_P(Backends, BackendContractTest,
//                            ::testing::Values(ContractTarget{"memory"}), ContractTargetName);
// Each backend is opened once per test binary (the first case that needs it) and kept
// until the suite ends. Backends that share one store (farm and graph-resp on one
// cluster) take disjoint id ranges through ContractTarget::id_base.
#ifndef FARM_TESTS_LINKBENCH_BACKEND_CONTRACT_H_
#define FARM_TESTS_LINKBENCH_BACKEND_CONTRACT_H_

#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/linkbench/backend_registry.h"

namespace farm::linkbench {

struct ContractTarget {
  std::string backend;  // the registry name
  int64_t id_base = 0;  // added to every id1 and node id the cases use
  // The backend's settings (called once, when it is opened); none when empty.
  std::function<BackendOptions()> options;
  // Non-empty: why the cases are skipped (e.g. no cluster); called in each SetUp.
  std::function<std::string()> skip_reason;
};

inline std::string ContractTargetName(const ::testing::TestParamInfo<ContractTarget>& info) {
  std::string name;
  for (char c : info.param.backend) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

inline void PrintTo(const ContractTarget& t, std::ostream* os) { *os << t.backend; }

namespace contract {

using graph::Link;
using graph::LinkRange;
using graph::Node;
using graph::Visibility;

constexpr int64_t kType = graph::kDefaultLinkType;

inline Link L(int64_t id1, int64_t id2, int64_t time, Visibility vis = Visibility::kVisible, std::string data = "d") {
  Link l;
  l.id1 = id1;
  l.type = kType;
  l.id2 = id2;
  l.visibility = vis;
  l.version = 3;
  l.time = time;
  l.data = std::move(data);
  return l;
}

class BackendContractTest : public ::testing::TestWithParam<ContractTarget> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "mariadb" && access("/usr/sbin/mariadbd", X_OK) != 0) {
      GTEST_SKIP() << "mariadbd is not installed (Debian package mariadb-server)";
    }
    if (GetParam().skip_reason) {
      if (const std::string why = GetParam().skip_reason(); !why.empty()) GTEST_SKIP() << why;
    }
    base_ = GetParam().id_base;
    auto& backend = backends()[GetParam().backend];
    if (backend == nullptr) {
      const BackendOptions options = GetParam().options ? GetParam().options() : BackendOptions{};
      absl::StatusOr<std::unique_ptr<Backend>> opened = OpenBackend(GetParam().backend, options);
      ASSERT_TRUE(opened.ok()) << opened.status();
      backend = *std::move(opened);
    }
    absl::StatusOr<std::unique_ptr<Connection>> c = backend->Connect();
    ASSERT_TRUE(c.ok()) << c.status();
    conn_ = *std::move(c);
  }
  static void TearDownTestSuite() { backends().clear(); }
  static std::map<std::string, std::unique_ptr<Backend>>& backends() {
    static auto* b = new std::map<std::string, std::unique_ptr<Backend>>();
    return *b;
  }
  uint64_t Count(int64_t id1) { return *conn_->CountLinks(id1, kType); }
  std::vector<int64_t> Id2s(const LinkRange& r) {
    absl::StatusOr<std::vector<Link>> links = conn_->GetLinkList(r);
    std::vector<int64_t> ids;
    if (!links.ok()) {
      ADD_FAILURE() << links.status();
      return ids;
    }
    for (size_t i = 0; i < links->size(); ++i) ids.push_back((*links)[i].id2);
    return ids;
  }

  std::unique_ptr<Connection> conn_;
  int64_t base_ = 0;  // added to every id1 and node id
};

TEST_P(BackendContractTest, AddUpdateHideAndCount) {
  const int64_t id1 = base_ + 100;
  EXPECT_EQ(Count(id1), 0u);
  EXPECT_TRUE(*conn_->AddLink(L(id1, 1, 1000)));  // new
  EXPECT_EQ(Count(id1), 1u);
  EXPECT_FALSE(*conn_->AddLink(L(id1, 1, 2000, Visibility::kVisible, "new data")));  // update
  EXPECT_EQ(Count(id1), 1u);
  const int64_t one[] = {1};
  auto got = *conn_->GetLinks(id1, kType, one);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], L(id1, 1, 2000, Visibility::kVisible, "new data"));
  EXPECT_FALSE(*conn_->AddLink(L(id1, 1, 3000, Visibility::kHidden)));  // hide through an upsert
  EXPECT_EQ(Count(id1), 0u);
  got = *conn_->GetLinks(id1, kType, one);  // hidden links are returned by get
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].visibility, Visibility::kHidden);
  EXPECT_TRUE(conn_->GetLinkList({id1, kType})->empty());
  EXPECT_FALSE(*conn_->AddLink(L(id1, 1, 4000)));  // re-add
  EXPECT_EQ(Count(id1), 1u);
  EXPECT_TRUE(*conn_->AddLink(L(id1, 2, 5000, Visibility::kHidden)));  // a new hidden link
  EXPECT_EQ(Count(id1), 1u);
}

TEST_P(BackendContractTest, DeleteHidesThenExpunges) {
  const int64_t id1 = base_ + 200;
  EXPECT_FALSE(*conn_->DeleteLink(id1, kType, 9, false));  // absent
  ASSERT_TRUE(*conn_->AddLink(L(id1, 9, 1000)));
  ASSERT_TRUE(*conn_->AddLink(L(id1, 10, 1000)));
  EXPECT_EQ(Count(id1), 2u);
  EXPECT_TRUE(*conn_->DeleteLink(id1, kType, 9, false));
  EXPECT_EQ(Count(id1), 1u);
  const int64_t nine[] = {9};
  auto got = *conn_->GetLinks(id1, kType, nine);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].visibility, Visibility::kHidden);
  EXPECT_TRUE(*conn_->DeleteLink(id1, kType, 9, false));  // hidden, not expunge: no change
  EXPECT_EQ(Count(id1), 1u);
  EXPECT_TRUE(*conn_->DeleteLink(id1, kType, 10, true));  // visible, expunged
  EXPECT_EQ(Count(id1), 0u);
  const int64_t ten[] = {10, 10};
  EXPECT_TRUE(conn_->GetLinks(id1, kType, ten)->empty());
  EXPECT_TRUE(*conn_->AddLink(L(id1, 10, 1000)));  // re-add after expunge: new again
  EXPECT_EQ(Count(id1), 1u);
}

TEST_P(BackendContractTest, LinkListNewestFirstWithRangeOffsetLimit) {
  const int64_t id1 = base_ + 300;
  for (int64_t i = 1; i <= 5; ++i) ASSERT_TRUE(*conn_->AddLink(L(id1, i, i * 100)));
  ASSERT_TRUE(*conn_->AddLink(L(id1, 6, 300)));  // a tie at 300: larger id2 first
  ASSERT_TRUE(*conn_->AddLink(L(id1, 7, 450, Visibility::kHidden)));
  EXPECT_EQ(Id2s({id1, kType}), (std::vector<int64_t>{5, 4, 6, 3, 2, 1}));
  EXPECT_EQ(Id2s({id1, kType, 200, 400}), (std::vector<int64_t>{4, 6, 3, 2}));
  EXPECT_EQ(Id2s({id1, kType, 0, INT64_MAX, 1, 2}), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(Id2s({id1, kType, 0, INT64_MAX, 10, 5}), (std::vector<int64_t>{}));
  const auto first = conn_->GetLinkList({id1, kType, 0, INT64_MAX, 0, 1});
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0], L(id1, 5, 500));
  EXPECT_EQ(conn_->GetLinkList({id1, kType, 0, INT64_MAX, 0, 10001}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Count(id1), 6u);
}

TEST_P(BackendContractTest, BulkLoadSetsCounts) {
  const int64_t id1 = base_ + 400;
  std::vector<Link> links;
  for (int64_t j = 0; j < 3000; ++j) links.push_back(L(id1, id1 + j, 1000 + j));
  EXPECT_EQ(*conn_->AddLinks(id1, kType, links), 3000u);
  EXPECT_EQ(Count(id1), 3000u);
  EXPECT_EQ(Count(id1 + 1), 0u);
  auto page = *conn_->GetLinkList({id1, kType, 0, INT64_MAX, 0, 2});
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].id2, id1 + 2999);
  EXPECT_EQ(conn_->GetLinkList({id1, kType})->size(), 3000u);
  std::vector<Link> wrong = {L(id1 + 1, 1, 1)};
  EXPECT_FALSE(conn_->AddLinks(id1, kType, wrong).ok());
}

// A loader's batch (AddLinkLists): lists of many id1s and both types at once, one of
// them long, a hidden link; every count and list as if each were loaded alone.
TEST_P(BackendContractTest, BulkLoadOfManyListsSetsEveryCount) {
  constexpr int64_t kType2 = kType + 1;
  const int64_t first = base_ + 450;
  std::vector<graph::LinkList> lists;
  for (int64_t id1 = first; id1 < first + 40; ++id1) {
    for (int64_t type : {kType, kType2}) {
      graph::LinkList list{id1, type, {}};
      const int64_t n = id1 == first + 7 && type == kType ? 1500 : (id1 - first) % 4;
      for (int64_t j = 0; j < n; ++j) {
        Link l = L(id1, id1 + j, 2000 + j, j == 1 ? Visibility::kHidden : Visibility::kVisible);
        l.type = type;
        list.links.push_back(l);
      }
      lists.push_back(std::move(list));
    }
  }
  absl::StatusOr<uint64_t> stored = conn_->AddLinkLists(lists);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, 1500u + 2 * (10 * (0 + 1 + 2 + 3)) - 3u);
  for (const graph::LinkList& list : lists) {
    const uint64_t visible = list.links.size() - (list.links.size() > 1 ? 1 : 0);
    EXPECT_EQ(*conn_->CountLinks(list.id1, list.type), visible) << list.id1 << " " << list.type;
    absl::StatusOr<std::vector<Link>> page = conn_->GetLinkList({list.id1, list.type});
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(page->size(), visible);
    const int64_t newest = list.links.size() == 2 ? 0 : static_cast<int64_t>(list.links.size()) - 1;  // (j = 1 hidden)
    if (!page->empty()) {
      EXPECT_EQ(page->front().id2, list.id1 + newest);
    }
  }
  std::vector<graph::LinkList> wrong = {graph::LinkList{first + 100, kType, {L(first + 101, 1, 1)}}};
  EXPECT_FALSE(conn_->AddLinkLists(wrong).ok());
}

TEST_P(BackendContractTest, DataLimitsAndBytes) {
  const int64_t id1 = base_ + 500;
  EXPECT_EQ(conn_->AddLink(L(id1, 1, 1, Visibility::kVisible, std::string(256, 'x'))).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::string bytes;
  for (int b = 1; b < 256; ++b) bytes += static_cast<char>(b);
  bytes.resize(255);
  ASSERT_TRUE(*conn_->AddLink(L(id1, 2, 1, Visibility::kVisible, bytes)));
  const int64_t two[] = {2};
  EXPECT_EQ((*conn_->GetLinks(id1, kType, two))[0].data, bytes);
}

TEST_P(BackendContractTest, NodesWithIdResetAndTypes) {
  const int64_t first = base_ + 1000;
  ASSERT_TRUE(conn_->ResetNodeIds(first).ok());
  Node n;
  n.type = graph::kDefaultNodeType;
  n.version = 1;
  n.time = 77;
  for (int b = 0; b < 256; ++b) n.data += static_cast<char>(b);  // every byte value
  EXPECT_EQ(*conn_->AddNode(n), first);
  EXPECT_EQ(*conn_->AddNode(n), first + 1);
  EXPECT_EQ(*conn_->AddNodes({n, n, n}), (std::vector<int64_t>{first + 2, first + 3, first + 4}));
  auto got = *conn_->GetNode(first, graph::kDefaultNodeType);
  ASSERT_TRUE(got.has_value());
  Node expected = n;
  expected.id = first;
  EXPECT_EQ(*got, expected);
  EXPECT_FALSE(conn_->GetNode(first, 7)->has_value());  // type mismatch
  EXPECT_FALSE(conn_->GetNode(first - 1, graph::kDefaultNodeType)->has_value());

  Node update = expected;
  update.version = 2;
  update.data = "updated";
  EXPECT_TRUE(*conn_->UpdateNode(update));
  EXPECT_TRUE(*conn_->UpdateNode(update));  // identical values: still found
  EXPECT_EQ((*conn_->GetNode(first, graph::kDefaultNodeType))->data, "updated");
  update.type = 7;
  EXPECT_FALSE(*conn_->UpdateNode(update));
  EXPECT_FALSE(*conn_->DeleteNode(first + 1, 7));
  EXPECT_TRUE(*conn_->DeleteNode(first + 1, graph::kDefaultNodeType));
  EXPECT_FALSE(*conn_->DeleteNode(first + 1, graph::kDefaultNodeType));
  EXPECT_FALSE(conn_->GetNode(first + 1, graph::kDefaultNodeType)->has_value());
  EXPECT_EQ(*conn_->AddNode(n), first + 5);  // ids keep increasing
}

}  // namespace contract

using contract::BackendContractTest;

}  // namespace farm::linkbench

#endif  // FARM_TESTS_LINKBENCH_BACKEND_CONTRACT_H_
