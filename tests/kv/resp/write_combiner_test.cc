// WriteCombiner on the FakeStore: a key's writes queue behind the one at the store and
// go as one step (one Put, or one transaction in order); command errors, store errors,
// aborts and commit errors give each write the outcome write_combiner.h promises.
#include "kv/resp/write_combiner.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv/resp/store_replies.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::FakeStoreOptions;
using ::farm::kv::testing::SessionEnv;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Records the name of every store operation scheduled.
FakeStoreOptions Recording(std::shared_ptr<std::vector<std::string>> ops) {
  FakeStoreOptions options;
  options.delay = [ops](absl::string_view op, absl::string_view) {
    ops->emplace_back(op);
    return absl::ZeroDuration();
  };
  return options;
}

// Appends `suffix` to the key's value and answers the new value; a value equal to
// `refuse` gets a command error instead (nothing written). `before_write` runs between
// the read and the write, once per attempt.
// The key lives as long as the body (the store reads key views when an operation runs).
CommandBody Append(std::string key, std::string suffix, std::string refuse = "\x01",
                   std::function<void()> before_write = nullptr) {
  auto k = std::make_shared<const std::string>(std::move(key));
  return [=](std::shared_ptr<KeyOps> ops, Done<CommandResult> done) {
    ops->Get(*k, [=, done = std::move(done)](absl::StatusOr<Value> v) mutable {
      if (!v.ok()) return done(v.status());
      const std::string old = v->value_or("");
      if (old == refuse) return done(RedisError("ERR refused"));
      if (before_write) before_write();
      auto next = std::make_shared<std::string>(old + suffix);
      ops->Put(*k, *next, [k, next, done = std::move(done)](absl::Status s) mutable {
        if (!s.ok()) return done(s);
        done(*next);
      });
    });
  };
}

class WriteCombinerTest : public ::testing::Test {
 protected:
  WriteCombinerTest() : env_(Recording(ops_)) {}

  // Submits a write and keeps its outcome in results_ (as "OK", a reply, or the error).
  void Put(const std::string& value) {
    const size_t i = Slot();
    values_.push_back(std::make_unique<std::string>(value));
    combiner_->Put("k", *values_.back(), [this, i](absl::Status s) {
      results_[i] = s.ok() ? "OK" : s.ToString();
    });
  }
  void Update(CommandBody body) {
    const size_t i = Slot();
    combiner_->Update("k", std::move(body), [this, i](CommandResult r) {
      results_[i] = r.ok() ? *r : r.status().ToString();
    });
  }
  size_t Slot() {
    results_.push_back(std::nullopt);
    return results_.size() - 1;
  }
  std::vector<std::string> Results() {
    std::vector<std::string> out;
    for (const auto& r : results_) out.push_back(r.value_or("(pending)"));
    return out;
  }
  int Count(absl::string_view op) { return static_cast<int>(std::count(ops_->begin(), ops_->end(), op)); }

  std::shared_ptr<std::vector<std::string>> ops_ = std::make_shared<std::vector<std::string>>();
  SessionEnv env_;
  std::shared_ptr<WriteCombiner> combiner_ = WriteCombiner::Create(&env_.store(), 5);
  std::vector<std::optional<std::string>> results_;
  std::vector<std::unique_ptr<std::string>> values_;  // Put's values outlive the calls
};

TEST_F(WriteCombinerTest, PutsOfAKeyWhileOneIsAtTheStoreAreOnePutOfTheLast) {
  Put("1");
  Put("2");
  Put("3");
  EXPECT_THAT(Results(), ElementsAre("(pending)", "(pending)", "(pending)"));  // never inline
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "OK", "OK"));
  EXPECT_EQ(env_.cluster().Peek("k"), "3");
  EXPECT_EQ(Count("put"), 2);  // "1" alone, then "3" for "2" and "3"
  EXPECT_EQ(combiner_->stats().steps, 2u);
  EXPECT_EQ(combiner_->stats().combined, 2u);
  EXPECT_EQ(combiner_->busy_keys(), 0u);
}

TEST_F(WriteCombinerTest, OtherKeysDoNotWait) {
  std::string a = "a", b = "b";
  int done = 0;
  combiner_->Put("x", a, [&](absl::Status s) { done += s.ok(); });
  combiner_->Put("y", b, [&](absl::Status s) { done += s.ok(); });
  EXPECT_EQ(combiner_->busy_keys(), 2u);
  EXPECT_EQ(Count("put"), 2);  // both at the store at once
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(done, 2);
}

TEST_F(WriteCombinerTest, MixedWritesRunInOrderInOneTransaction) {
  Put("a");
  Update(Append("k", "b"));
  Put("c");
  Update(Append("k", "d"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "ab", "OK", "cd"));
  EXPECT_EQ(env_.cluster().Peek("k"), "cd");
  EXPECT_EQ(combiner_->stats().txn_attempts, 1u);
  EXPECT_EQ(Count("commit"), 1);
}

// Removes the key; answers whether it existed.
CommandBody RemoveKey(std::string key) {
  auto k = std::make_shared<const std::string>(std::move(key));
  return [=](std::shared_ptr<KeyOps> ops, Done<CommandResult> done) {
    ops->Remove(*k, [k, done = std::move(done)](absl::StatusOr<bool> r) mutable {
      if (!r.ok()) return done(r.status());
      done(*r ? "removed" : "absent");
    });
  };
}

TEST_F(WriteCombinerTest, AStepReadsTheKeyOnceAndWritesItBackOnce) {
  Put("a");
  for (const char* s : {"1", "2", "3", "4"}) Update(Append("k", s));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "a1", "a12", "a123", "a1234"));
  EXPECT_EQ(Count("txn_get"), 1);
  EXPECT_EQ(Count("txn_put"), 1);
  EXPECT_EQ(env_.cluster().Peek("k"), "a1234");
}

TEST_F(WriteCombinerTest, RemovesInsideAStepSeeAndLeaveTheRightValue) {
  Put("a");
  Update(RemoveKey("k"));
  Update(RemoveKey("k"));
  Update(Append("k", "b"));
  Update(RemoveKey("k"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "removed", "absent", "b", "removed"));
  EXPECT_EQ(env_.cluster().Peek("k"), std::nullopt);
  EXPECT_EQ(Count("txn_remove"), 1);
  EXPECT_EQ(Count("txn_put"), 0);
}

TEST_F(WriteCombinerTest, APutInsideAStepNeedsNoRead) {
  Put("a");
  Put("b");
  Update(Append("k", "c"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "OK", "bc"));
  EXPECT_EQ(Count("txn_get"), 0);
  EXPECT_EQ(env_.cluster().Peek("k"), "bc");
}

TEST_F(WriteCombinerTest, AnUpdateAloneIsItsOwnTransaction) {
  Update(Append("k", "x"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("x"));
  EXPECT_EQ(Count("commit"), 1);
  EXPECT_EQ(combiner_->stats().combined, 0u);
}

TEST_F(WriteCombinerTest, ACommandErrorIsItsReplyAndTheOthersGoOn) {
  Put("x");
  Update(Append("k", "1", /*refuse=*/"x"));
  Update(Append("k", "y"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(Results()[1], RedisError("ERR refused").ToString());
  EXPECT_EQ(Results()[2], "xy");
  EXPECT_EQ(env_.cluster().Peek("k"), "xy");
  EXPECT_EQ(combiner_->stats().one_by_one, 0u);
}

TEST_F(WriteCombinerTest, AStepWhoseWritesAllRefuseCommitsNothing) {
  Update(Append("k", "1", /*refuse=*/""));
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(Results()[0], RedisError("ERR refused").ToString());
  EXPECT_EQ(Count("commit"), 0);
}

TEST_F(WriteCombinerTest, AStoreErrorInsideAStepRunsEachWriteOnItsOwn) {
  const size_t first = Slot();
  std::string zero = "0";
  combiner_->Put("k", zero, [&, first](absl::Status s) {
    results_[first] = s.ok() ? "OK" : s.ToString();
    // The next operation is the combined step's first read.
    env_.cluster().InjectError(absl::UnavailableError("node away"), 1);
  });
  Update(Append("k", "1"));
  Update(Append("k", "2"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "01", "012"));
  EXPECT_EQ(combiner_->stats().one_by_one, 1u);
}

TEST_F(WriteCombinerTest, AnAbortedOperationBeforeTheCommitRetriesTheStep) {
  const size_t first = Slot();
  std::string zero = "0";
  combiner_->Put("k", zero, [&, first](absl::Status s) {
    results_[first] = s.ok() ? "OK" : s.ToString();
    // The combined step's first read runs into a conflict (a locked key, say).
    env_.cluster().InjectError(absl::AbortedError("locked"), 1);
  });
  Update(Append("k", "1"));
  Update(Append("k", "2"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "01", "012"));
  EXPECT_EQ(combiner_->stats().txn_attempts, 2u);
  EXPECT_EQ(combiner_->stats().one_by_one, 0u);
}

TEST_F(WriteCombinerTest, ARefusedCombinedPutRunsEachPutOnItsOwn) {
  const size_t first = Slot();
  std::string zero = "0";
  combiner_->Put("k", zero, [&, first](absl::Status s) {
    results_[first] = s.ok() ? "OK" : s.ToString();
    env_.cluster().InjectError(absl::ResourceExhaustedError("region full"), 1);
  });
  Put("1");
  Put("2");
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "OK", "OK"));
  EXPECT_EQ(env_.cluster().Peek("k"), "2");
  EXPECT_EQ(Count("put"), 4);  // "0"; "2" for both (refused); "1"; "2"
}

// A combined Put whose outcome is unknown (it may have been applied) is every write's
// outcome: replaying "1" then "2" could put "1" back over a "2" others already read.
TEST_F(WriteCombinerTest, ACombinedPutOfUnknownOutcomeIsEveryWritesError) {
  const size_t first = Slot();
  std::string zero = "0";
  combiner_->Put("k", zero, [&, first](absl::Status s) {
    results_[first] = s.ok() ? "OK" : s.ToString();
    env_.cluster().InjectError(absl::UnavailableError("node away"), 1);
  });
  Put("1");
  Put("2");
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "UNAVAILABLE: node away", "UNAVAILABLE: node away"));
  EXPECT_EQ(Count("put"), 2);  // "0"; "2" for both, not replayed
}

TEST_F(WriteCombinerTest, AnAbortedStepRunsAgainAsAWhole) {
  Put("0");
  bool poked = false;
  // The first attempt's read is overtaken by another client's write: Aborted.
  Update(Append("k", "1", "\x01", [&] {
    if (!poked) env_.cluster().Poke("k", "Z");
    poked = true;
  }));
  Update(Append("k", "2"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "Z1", "Z12"));
  EXPECT_EQ(combiner_->stats().txn_attempts, 2u);
}

// When a step's attempts run out, nothing was committed: each write runs on its own, so
// a plain Put (which is never Aborted) succeeds and an update gets its own attempts.
TEST_F(WriteCombinerTest, WhenTheAttemptsRunOutEachWriteRunsOnItsOwn) {
  Put("0");
  Update(Append("k", "1", "\x01", [&] { env_.cluster().Poke("k", "Z"); }));
  Put("p");
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(Results()[0], "OK");
  EXPECT_TRUE(absl::StrContains(Results()[1], "ABORTED")) << Results()[1];
  EXPECT_EQ(Results()[2], "OK");
  EXPECT_EQ(combiner_->stats().txn_attempts, 5u);
  EXPECT_EQ(combiner_->stats().one_by_one, 1u);
  EXPECT_EQ(env_.cluster().Peek("k"), "p");
}

TEST_F(WriteCombinerTest, ACommitErrorIsEveryWritesError) {
  Put("0");
  Update(Append("k", "1"));
  Update(Append("k", "2"));
  env_.cluster().InjectCommitError(absl::UnavailableError("node away"), 1);
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(Results()[0], "OK");
  EXPECT_EQ(Results()[1], "UNAVAILABLE: node away");
  EXPECT_EQ(Results()[2], "UNAVAILABLE: node away");
  EXPECT_EQ(env_.cluster().Peek("k"), "0");  // the outcome is unknown; here: nothing
}

// A write that refused itself wrote nothing: it keeps its own reply whatever the
// commit of the others does.
TEST_F(WriteCombinerTest, ARefusedWriteKeepsItsReplyWhenTheCommitFails) {
  Put("0");
  Update(Append("k", "1"));
  Update(Append("k", "2", /*refuse=*/"01"));
  env_.cluster().InjectCommitError(absl::UnavailableError("node away"), 1);
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "UNAVAILABLE: node away", HasSubstr("ERR refused")));
}

TEST_F(WriteCombinerTest, AWriteSubmittedFromACallbackJoinsTheQueue) {
  const size_t first = Slot();
  std::string one = "1", two = "2", three = "3";
  combiner_->Put("k", one, [&, first](absl::Status) {
    results_[first] = "OK";
    Put("4");  // while "2" and "3" are at the store
  });
  Put("2");
  Put("3");
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(Results(), ElementsAre("OK", "OK", "OK", "OK"));
  EXPECT_EQ(env_.cluster().Peek("k"), "4");
  EXPECT_EQ(Count("put"), 2);  // "1"; then "4" for "2", "3" and "4"
}

}  // namespace
}  // namespace farm::kv::resp
