// The graph under concurrent writers on every node:
//   - every link's history (add = put of a unique value, expunge = remove, GetLinks =
//     get) is linearizable (the kv register checker);
//   - read-only transactions always find a list's count equal to its visible links;
//   - lock-free pages (GetLinkList over lists of several blocks) show one state of the
//     list: writers add and hide links in pairs, in one transaction, so a page never
//     holds one link of a pair without the other.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/graph/graph_cluster.h"
#include "tests/kv/register_checker.h"
#include "tests/support/fabric_test_util.h"

namespace farm::graph::testing {
namespace {

using farm::kv::testing::CheckRegister;
using farm::kv::testing::RegisterOp;

constexpr int64_t kRegisterList = 1;  // id1 of the list whose links are registers
constexpr int64_t kPairList = 2;      // id1 of the list written in pairs
constexpr int64_t kPairOffset = 1000;  // link k pairs with k + kPairOffset
constexpr int kRegisterLinks = 6;
constexpr int kPairs = 24;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename R, typename F>
R RunOn(GraphCluster& g, NodeId on, size_t t, F f) {
  return g.local().Run<R>(on, t, std::move(f));
}

// (backend, lists indexed from their second block with four-entry tree nodes — their
// indexes built, two blocks a transaction, while the writers run — or as by default)
class GraphConcurrencyTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(GraphConcurrencyTest, WritersOnEveryNodeReadersSeeOneState) {
  const auto [backend, indexed] = GetParam();
  absl::StatusOr<std::unique_ptr<GraphCluster>> started = GraphCluster::Start(
      backend, 3, "graph_concurrency", 3, indexed ? ListIndexTuning{1, 4, 2} : ListIndexTuning{});
  ASSERT_TRUE(started.ok()) << started.status();
  GraphCluster& g = **started;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);

  std::mutex mu;
  std::map<int64_t, std::vector<RegisterOp>> history;  // by id2
  std::atomic<int> failures{0};
  std::atomic<uint64_t> checks{0}, indexed_checks{0}, pages{0}, multi_block_pages{0};
  auto fail = [&](const std::string& what) {
    if (failures.fetch_add(1) < 10) ADD_FAILURE() << what;
  };

  std::vector<std::thread> threads;
  for (NodeId n : {1, 2, 3}) {
    // Writer: registers and pairs, on thread 0.
    threads.emplace_back([&, n] {
      std::mt19937_64 rng(n * 7919);
      uint64_t seq = 0;
      while (std::chrono::steady_clock::now() < deadline && failures == 0) {
        const int64_t id2 = static_cast<int64_t>(rng() % kRegisterLinks);
        if (rng() % 2 == 0) {
          const std::string value = absl::StrCat("n", n, "-", seq++);
          RegisterOp op{RegisterOp::Kind::kPut, value, false, NowNs(), 0};
          absl::StatusOr<bool> r = RunOn<absl::StatusOr<bool>>(g, n, 0, [&](GraphClient& c, auto f) {
            c.AddLink(Link{kRegisterList, kDefaultLinkType, id2, Visibility::kVisible, 0, static_cast<int64_t>(seq), value}, std::move(f));
          });
          op.end_ns = NowNs();
          if (!r.ok()) return fail(r.status().ToString());
          op.existed = !*r;
          std::lock_guard l(mu);
          history[id2].push_back(op);
        } else {
          RegisterOp op{RegisterOp::Kind::kRemove, std::nullopt, false, NowNs(), 0};
          absl::StatusOr<bool> r = RunOn<absl::StatusOr<bool>>(g, n, 0, [&](GraphClient& c, auto f) {
            c.DeleteLink(kRegisterList, kDefaultLinkType, id2, true, std::move(f));
          });
          op.end_ns = NowNs();
          if (!r.ok()) return fail(r.status().ToString());
          op.existed = *r;
          std::lock_guard l(mu);
          history[id2].push_back(op);
        }
        // A pair: both visible (with a new time, moving them to the head) or both hidden.
        const int64_t k = static_cast<int64_t>(rng() % kPairs);
        const Visibility vis = rng() % 3 == 0 ? Visibility::kHidden : Visibility::kVisible;
        const int64_t time = static_cast<int64_t>(rng() % 1000);
        std::vector<Link> pair = {Link{kPairList, kDefaultLinkType, k, vis, 0, time, std::string(150, 'p')},
                                  Link{kPairList, kDefaultLinkType, k + kPairOffset, vis, 0, time, std::string(150, 'q')}};
        absl::StatusOr<uint64_t> r = RunOn<absl::StatusOr<uint64_t>>(g, n, 0, [&](GraphClient& c, auto f) {
          c.AddLinks(kPairList, kDefaultLinkType, pair, std::move(f));
        });
        if (!r.ok()) return fail(r.status().ToString());
      }
    });
    // Reader: registers by GetLinks, counts by read-only transactions, pages lock-free.
    threads.emplace_back([&, n] {
      std::mt19937_64 rng(n * 104729);
      while (std::chrono::steady_clock::now() < deadline && failures == 0) {
        const int64_t id2 = static_cast<int64_t>(rng() % kRegisterLinks);
        RegisterOp op{RegisterOp::Kind::kGet, std::nullopt, false, NowNs(), 0};
        absl::StatusOr<std::vector<Link>> got = RunOn<absl::StatusOr<std::vector<Link>>>(g, n, 1, [&](GraphClient& c, auto f) {
          c.GetLinks(kRegisterList, kDefaultLinkType, std::vector<int64_t>{id2}, std::move(f));
        });
        op.end_ns = NowNs();
        if (!got.ok()) return fail(got.status().ToString());
        if (!got->empty()) op.value = (*got)[0].data;
        {
          std::lock_guard l(mu);
          history[id2].push_back(op);
        }
        const int64_t list = rng() % 2 == 0 ? kRegisterList : kPairList;
        absl::StatusOr<ListSnapshot> snap = RunOn<absl::StatusOr<ListSnapshot>>(g, n, 1, [&](GraphClient& c, auto f) {
          c.ReadList(list, kDefaultLinkType, std::move(f));
        });
        if (!snap.ok()) return fail(snap.status().ToString());
        uint64_t visible = 0;
        for (const Link& l : snap->links) visible += l.visibility == Visibility::kVisible;
        if (visible != snap->count) fail(absl::StrCat("list ", list, ": count ", snap->count, " but ", visible, " visible links"));
        if (!snap->index_check.ok()) fail(absl::StrCat("list ", list, ": ", snap->index_check.ToString()));
        indexed_checks += snap->indexed;
        ++checks;
        absl::StatusOr<std::vector<Link>> page = RunOn<absl::StatusOr<std::vector<Link>>>(g, n, 1, [&](GraphClient& c, auto f) {
          c.GetLinkList(LinkRange{kPairList, kDefaultLinkType}, std::move(f));
        });
        if (!page.ok()) return fail(page.status().ToString());
        std::map<int64_t, int64_t> time_of;
        for (const Link& l : *page) time_of[l.id2] = l.time;
        for (int64_t k = 0; k < kPairs; ++k) {
          auto a = time_of.find(k), b = time_of.find(k + kPairOffset);
          if ((a == time_of.end()) != (b == time_of.end()) || (a != time_of.end() && a->second != b->second)) {
            fail(absl::StrCat("a lock-free page shows half of pair ", k));
          }
        }
        ++pages;
        if (page->size() * 180 > kMaxBlockBytes) ++multi_block_pages;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_GT(checks.load(), 20u);
  EXPECT_GT(multi_block_pages.load(), 10u) << "pages should span several blocks";
  if (indexed) {
    EXPECT_GT(indexed_checks.load(), 10u) << "the pair list should have been indexed early";
  }
  for (auto& [id2, ops] : history) {
    EXPECT_TRUE(CheckRegister(ops).ok()) << "link " << id2 << ": " << CheckRegister(ops);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GraphConcurrencyTest,
                         ::testing::Combine(::testing::ValuesIn(farm::testing::TestBackends()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_indexed" : "");
                         });

}  // namespace
}  // namespace farm::graph::testing
