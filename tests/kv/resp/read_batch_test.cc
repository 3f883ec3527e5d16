// ReadBatch on the FakeStore: lookups gathered between Begin and Flush are one MultiGet
// reading each key once; each caller gets its values; a failed MultiGet is issued again
// lookup by lookup, so an error reaches only the lookup it belongs to.
#include "kv/resp/read_batch.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::FakeStoreOptions;
using ::farm::kv::testing::SessionEnv;
using ::testing::ElementsAre;
using Value = ReadBatch::Value;

// Records every store operation scheduled, as "op key".
FakeStoreOptions Recording(std::shared_ptr<std::vector<std::string>> ops) {
  FakeStoreOptions options;
  options.delay = [ops](absl::string_view op, absl::string_view key) {
    ops->push_back(absl::StrCat(op, " ", key));
    return absl::ZeroDuration();
  };
  return options;
}

std::string Show(const absl::StatusOr<Value>& v) {
  if (!v.ok()) return v.status().ToString();
  return v->value_or("(nil)");
}

std::string Show(const absl::StatusOr<std::vector<Value>>& v) {
  if (!v.ok()) return v.status().ToString();
  std::vector<std::string> parts;
  for (const Value& x : *v) parts.push_back(x.value_or("(nil)"));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

class ReadBatchTest : public ::testing::Test {
 protected:
  ReadBatchTest() : env_(Recording(ops_)) {
    env_.cluster().Poke("a", "1");
    env_.cluster().Poke("b", "2");
  }
  void Get(const std::string& key) {
    const size_t i = Slot();
    keys_.push_back(std::make_unique<std::string>(key));
    batch_->Get(*keys_.back(), [this, i](absl::StatusOr<Value> v) { results_[i] = Show(v); });
  }
  void MultiGet(std::vector<std::string> keys) {
    const size_t i = Slot();
    lists_.push_back(std::make_unique<std::vector<std::string>>(std::move(keys)));
    batch_->MultiGet(*lists_.back(), [this, i](absl::StatusOr<std::vector<Value>> v) {
      results_[i] = Show(v);
    });
  }
  size_t Slot() {
    results_.push_back("(pending)");
    return results_.size() - 1;
  }

  std::shared_ptr<std::vector<std::string>> ops_ = std::make_shared<std::vector<std::string>>();
  SessionEnv env_;
  std::unique_ptr<ReadBatch> batch_ = std::make_unique<ReadBatch>(&env_.store());
  std::vector<std::string> results_;
  std::vector<std::unique_ptr<std::string>> keys_;  // callers' keys outlive their lookups
  std::vector<std::unique_ptr<std::vector<std::string>>> lists_;
};

TEST_F(ReadBatchTest, GatheredLookupsAreOneMultiGetReadingEachKeyOnce) {
  batch_->Begin();
  Get("a");
  Get("b");
  Get("a");
  MultiGet({"b", "missing", "a"});
  Get("missing");
  EXPECT_TRUE(ops_->empty());  // nothing issued before Flush
  batch_->Flush();
  EXPECT_THAT(*ops_, ElementsAre("multiget a"));
  EXPECT_THAT(results_, ElementsAre("(pending)", "(pending)", "(pending)", "(pending)", "(pending)"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(results_, ElementsAre("1", "2", "1", "[2,(nil),1]", "(nil)"));
  EXPECT_EQ(batch_->stats().batches, 1u);
  EXPECT_EQ(batch_->stats().batched, 5u);
  EXPECT_EQ(batch_->stats().keys, 3u);
  EXPECT_FALSE(batch_->gathering());
}

TEST_F(ReadBatchTest, OneRequestGoesAsItWasAsked) {
  batch_->Begin();
  Get("a");
  batch_->Flush();
  batch_->Begin();
  MultiGet({"a", "b"});
  batch_->Flush();
  EXPECT_THAT(*ops_, ElementsAre("get a", "multiget a"));
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(results_, ElementsAre("1", "[1,2]"));
  EXPECT_EQ(batch_->stats().batches, 0u);
}

TEST_F(ReadBatchTest, OutsideBeginAndFlushLookupsGoToTheStoreAtOnce) {
  Get("a");
  MultiGet({"b"});
  EXPECT_THAT(*ops_, ElementsAre("get a", "multiget b"));
  batch_->Flush();  // nothing gathered
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(results_, ElementsAre("1", "[2]"));
}

TEST_F(ReadBatchTest, AFailedMultiGetIsIssuedAgainLookupByLookup) {
  env_.cluster().InjectError(absl::UnavailableError("node away"), 1);
  batch_->Begin();
  Get("a");
  MultiGet({"a", "b"});
  Get("b");
  batch_->Flush();
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(results_, ElementsAre("1", "[1,2]", "2"));
  EXPECT_THAT(*ops_, ElementsAre("multiget a", "get a", "multiget a", "get b"));
  EXPECT_EQ(batch_->stats().retried, 1u);
}

TEST_F(ReadBatchTest, AnErrorReachesOnlyTheLookupItBelongsTo) {
  // The batch fails, then the first lookup on its own: the others still get values.
  env_.cluster().InjectError(absl::UnavailableError("node away"), 2);
  batch_->Begin();
  Get("a");
  Get("b");
  batch_->Flush();
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(results_, ElementsAre("UNAVAILABLE: node away", "2"));
}

TEST_F(ReadBatchTest, TheBatchMayGoWhileItsLookupsAreInFlight) {
  batch_->Begin();
  Get("a");
  Get("b");
  batch_->Flush();
  batch_.reset();
  ASSERT_TRUE(env_.Drain());
  EXPECT_THAT(results_, ElementsAre("1", "2"));
}

}  // namespace
}  // namespace farm::kv::resp
