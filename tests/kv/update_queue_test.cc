// UpdateQueue and UpdateBatch (kv/update_queue.h) alone: batches group a key's waiting
// updates in arrival order, busy keys and keys past the limit wait in order, a split
// batch keeps both halves' views, and a random run of pushes, batches and releases
// against a model never reorders a key's updates nor puts one key in two running
// batches.
#include "kv/update_queue.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace farm::kv {
namespace {

// An update whose rpc_id and delta are its sequence number.
void Push(UpdateQueue& q, const std::string& key, uint64_t seq, OpKind kind = OpKind::kIncrement,
          const std::string& value = "") {
  UpdateRequest r;
  r.kind = kind;
  r.key = key;
  r.value = value;
  r.delta = static_cast<int64_t>(seq);
  Message m;
  m.reply_to.rpc_id = seq;
  m.payload = "dropped";
  q.Push(r, m);
}

// Remaining key k of `b` as "key:seq,seq,...", checking ops against reply_to.
std::string Describe(UpdateBatch& b, size_t k) {
  const KeyUpdates& u = b.remaining()[k];
  std::string s = absl::StrCat(u.key, ":");
  absl::Span<const Message> to = b.reply_to(k);
  EXPECT_EQ(to.size(), u.ops.size());
  for (size_t i = 0; i < u.ops.size(); ++i) {
    EXPECT_EQ(static_cast<uint64_t>(u.ops[i].delta), to[i].reply_to.rpc_id) << "ops and replies out of step";
    EXPECT_TRUE(to[i].payload.empty()) << "the payload is not kept";
    absl::StrAppend(&s, i == 0 ? "" : ",", u.ops[i].delta);
  }
  return s;
}

std::vector<std::string> DescribeAll(UpdateBatch& b) {
  std::vector<std::string> out;
  for (size_t k = 0; k < b.remaining_keys(); ++k) out.push_back(Describe(b, k));
  return out;
}

using Keys = std::vector<std::string>;

TEST(UpdateQueueTest, ABatchGroupsEachKeysUpdatesInArrivalOrder) {
  UpdateQueue q;
  Push(q, "a", 1);
  Push(q, "b", 2, OpKind::kPut, "value of b, longer than a short string's buffer");
  Push(q, "a", 3);
  Push(q, "c", 4);
  Push(q, "b", 5, OpKind::kRemove);
  UpdateBatch b;
  q.TakeBatch(64, b);
  EXPECT_EQ(DescribeAll(b), (Keys{"a:1,3", "b:2,5", "c:4"}));
  EXPECT_EQ(b.remaining()[1].ops[0].kind, OpKind::kPut);
  EXPECT_EQ(b.remaining()[1].ops[0].value, "value of b, longer than a short string's buffer");
  EXPECT_EQ(b.remaining()[1].ops[1].kind, OpKind::kRemove);
  EXPECT_EQ(b.remaining_updates(), 5u);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.busy_keys(), 3u);
}

TEST(UpdateQueueTest, BusyKeysAndKeysPastTheLimitWaitInOrder) {
  UpdateQueue q;
  Push(q, "a", 1);
  UpdateBatch first;
  q.TakeBatch(64, first);
  ASSERT_EQ(DescribeAll(first), (Keys{"a:1"}));
  Push(q, "a", 2);
  Push(q, "b", 3);
  Push(q, "c", 4);
  Push(q, "a", 5);
  Push(q, "d", 6);
  Push(q, "b", 7);
  UpdateBatch second;
  q.TakeBatch(2, second);
  EXPECT_EQ(DescribeAll(second), (Keys{"b:3,7", "c:4"})) << "a is busy; d is past the limit";
  EXPECT_EQ(q.size(), 3u);
  UpdateBatch fourth;
  q.TakeBatch(64, fourth);
  EXPECT_EQ(DescribeAll(fourth), (Keys{"d:6"})) << "a still busy";
  q.Release("a");
  UpdateBatch third;
  q.TakeBatch(64, third);
  EXPECT_EQ(DescribeAll(third), (Keys{"a:2,5"}));
  EXPECT_EQ(q.size(), 0u);
  UpdateBatch empty;
  q.TakeBatch(64, empty);
  EXPECT_TRUE(empty.empty());
}

TEST(UpdateQueueTest, ASplitBatchKeepsBothHalvesAndConsumeSkipsFinishedKeys) {
  UpdateQueue q;
  for (uint64_t i = 0; i < 10; ++i) Push(q, absl::StrCat("key number ", i % 5, " with a long name"), i);
  UpdateBatch b;
  q.TakeBatch(64, b);
  ASSERT_EQ(b.remaining_keys(), 5u);
  b.Consume(1);
  UpdateBatch tail;
  b.MoveTailTo(2, tail);
  EXPECT_EQ(DescribeAll(b), (Keys{"key number 1 with a long name:1,6", "key number 2 with a long name:2,7"}));
  EXPECT_EQ(DescribeAll(tail), (Keys{"key number 3 with a long name:3,8", "key number 4 with a long name:4,9"}));
  EXPECT_EQ(b.remaining_updates(), 4u);
  EXPECT_EQ(tail.remaining_updates(), 4u);
  // The tail splits again; the slots are reused by a later batch.
  UpdateBatch last;
  tail.MoveTailTo(1, last);
  EXPECT_EQ(DescribeAll(tail), (Keys{"key number 3 with a long name:3,8"}));
  EXPECT_EQ(DescribeAll(last), (Keys{"key number 4 with a long name:4,9"}));
  last.Consume(1);
  EXPECT_TRUE(last.empty());
  for (int i = 0; i < 5; ++i) q.Release(absl::StrCat("key number ", i, " with a long name"));
  Push(q, "x", 20);
  q.TakeBatch(64, last);
  EXPECT_EQ(DescribeAll(last), (Keys{"x:20"}));
}

TEST(UpdateQueueTest, BusyCountsAreByContentAndCounted) {
  UpdateQueue q;
  q.MarkBusy("k");
  q.MarkBusy(std::string("k"));
  Push(q, "k", 1);
  UpdateBatch b;
  q.TakeBatch(64, b);
  EXPECT_TRUE(b.empty());
  q.Release("k");
  q.TakeBatch(64, b);
  EXPECT_TRUE(b.empty()) << "marked twice, released once";
  q.Release("k");
  q.TakeBatch(64, b);
  EXPECT_EQ(DescribeAll(b), (Keys{"k:1"}));
}

// Random pushes, batches (of random limits), splits and completions against a model:
// every key's updates leave in push order, each exactly once, and no key is in two
// running batches.
TEST(UpdateQueueTest, RandomRunsKeepPerKeyOrderAndOneRunningBatchPerKey) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    UpdateQueue q;
    std::vector<std::unique_ptr<UpdateBatch>> running;
    std::map<std::string, std::vector<uint64_t>> pushed, left;
    std::set<std::string> in_running;
    uint64_t seq = 0;
    auto finish = [&](size_t i) {
      UpdateBatch& b = *running[i];
      for (size_t k = 0; k < b.remaining_keys(); ++k) {
        const KeyUpdates& u = b.remaining()[k];
        const std::string key(u.key);
        for (const KeyOp& op : u.ops) left[key].push_back(static_cast<uint64_t>(op.delta));
        in_running.erase(key);
        q.Release(key);
      }
      running.erase(running.begin() + static_cast<ptrdiff_t>(i));
    };
    for (int step = 0; step < 3000; ++step) {
      const int what = static_cast<int>(rng() % 10);
      if (what < 5) {
        // Keys of short and long names (inline and heap strings).
        const std::string key = absl::StrCat(rng() % 2 ? "k" : "a key with a long name ", rng() % 12);
        pushed[key].push_back(++seq);
        Push(q, key, seq);
      } else if (what < 7) {
        auto b = std::make_unique<UpdateBatch>();
        q.TakeBatch(1 + rng() % 6, *b);
        for (size_t k = 0; k < b->remaining_keys(); ++k) {
          const std::string key(b->remaining()[k].key);
          ASSERT_TRUE(in_running.insert(key).second) << "seed " << seed << ": " << key << " in two running batches";
          (void)Describe(*b, k);
        }
        if (!b->empty()) running.push_back(std::move(b));
      } else if (what < 8 && !running.empty()) {
        UpdateBatch& b = *running[rng() % running.size()];
        if (b.remaining_keys() > 1) {
          auto tail = std::make_unique<UpdateBatch>();
          b.MoveTailTo(1 + rng() % (b.remaining_keys() - 1), *tail);
          running.push_back(std::move(tail));
        }
      } else if (!running.empty()) {
        finish(rng() % running.size());
      }
    }
    while (!running.empty()) finish(0);
    while (q.size() > 0) {
      UpdateBatch b;
      q.TakeBatch(64, b);
      ASSERT_FALSE(b.empty());
      for (size_t k = 0; k < b.remaining_keys(); ++k) {
        const KeyUpdates& u = b.remaining()[k];
        for (const KeyOp& op : u.ops) left[std::string(u.key)].push_back(static_cast<uint64_t>(op.delta));
        q.Release(u.key);
      }
    }
    EXPECT_EQ(left, pushed) << "seed " << seed;
    EXPECT_EQ(q.busy_keys(), 0u);
  }
}

}  // namespace
}  // namespace farm::kv
