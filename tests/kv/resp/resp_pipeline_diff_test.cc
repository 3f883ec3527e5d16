// Pipelines served as batches (issue 20): random pipelines of mixed commands — hits,
// misses, argument errors, WRONGTYPE, bad integers, a key written several times in a
// row, MULTI/EXEC inside the pipeline — sent as one write (or in random pieces), must
// get exactly the replies, in order, and leave exactly the store contents, that the
// same commands sent one at a time get. On the FakeStore, with and without random
// operation delays (so completions come back out of order), one session alone and two
// sessions sharing one thread's WriteCombiner. (Against a real cluster:
// resp_pipeline_cluster_test.cc; against redis-server: resp_redis_diff_test.cc.)
//
// FARM_DIFF_SEED=<n> replays one sequence; FARM_DIFF_COMMANDS sets its length.
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "kv/resp/resp_session.h"
#include "kv/resp/write_combiner.h"
#include "tests/kv/resp/random_commands.h"
#include "tests/kv/resp/resp_reply_reader.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::DecodeReplies;
using ::farm::kv::testing::FakeStoreOptions;
using ::farm::kv::testing::Multibulk;
using ::farm::kv::testing::Printable;
using ::farm::kv::testing::RandomCommandOptions;
using ::farm::kv::testing::RandomSequence;
using ::farm::kv::testing::Rng;
using ::farm::kv::testing::SessionEnv;
using ::farm::kv::testing::Words;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t n = 0;
  return v != nullptr && absl::SimpleAtoi(v, &n) ? n : fallback;
}

std::vector<uint64_t> Seeds(std::vector<uint64_t> fallback) {
  if (const int64_t seed = EnvInt("FARM_DIFF_SEED", -1); seed >= 0) {
    return {static_cast<uint64_t>(seed)};
  }
  return fallback;
}

// Every operation of the store takes 0–300 µs, drawn from `seed`: operations issued
// together complete out of order.
FakeStoreOptions RandomDelays(uint64_t seed) {
  FakeStoreOptions options;
  auto rng = std::make_shared<Rng>(seed);
  options.delay = [rng](absl::string_view, absl::string_view) {
    return absl::Microseconds(std::uniform_int_distribution<int>(0, 300)(*rng));
  };
  return options;
}

const char* const kKeys[] = {"h", "h2", "s", "n", "x"};

// The store's contents under `prefix`, for comparison.
std::string Contents(SessionEnv& env, const std::string& prefix) {
  std::string out;
  for (const char* k : kKeys) {
    const std::optional<std::string> v = env.cluster().Peek(prefix + k);
    absl::StrAppend(&out, k, "=", v ? absl::CHexEscape(*v) : "(none)", "; ");
  }
  return out;
}

// The replies of `sequence` sent one command at a time, each answered before the next.
std::string OneAtATime(SessionEnv& env, RespSession& session, const std::vector<Words>& sequence) {
  std::string out;
  for (const Words& words : sequence) {
    session.Feed(Multibulk(words));
    EXPECT_TRUE(env.Drain());
    absl::StrAppend(&out, session.output());
    session.ConsumeOutput(session.output().size());
  }
  return out;
}

std::string Pipeline(const std::vector<Words>& sequence) {
  std::string out;
  for (const Words& words : sequence) out += Multibulk(words);
  return out;
}

// Reports the first reply that differs, with the command that got it.
void ExpectSameReplies(const std::vector<Words>& sequence, const std::string& expected,
                       const std::string& got) {
  const testing::DecodedReplies want = DecodeReplies(expected);
  const testing::DecodedReplies have = DecodeReplies(got);
  ASSERT_FALSE(have.malformed);
  ASSERT_EQ(want.replies.size(), sequence.size());
  for (size_t i = 0; i < sequence.size(); ++i) {
    ASSERT_LT(i, have.replies.size()) << "no reply to command " << i << ": " << Printable(sequence[i]);
    ASSERT_EQ(have.replies[i], want.replies[i]) << "command " << i << ": " << Printable(sequence[i]);
  }
  EXPECT_EQ(got, expected);  // byte for byte, nothing more
}

struct Coverage {
  uint64_t combined_writes = 0;
  uint64_t txn_steps = 0;
  uint64_t batches = 0;
  uint64_t batched = 0;
  void Add(const RespSession& s) {
    combined_writes += s.write_combiner().stats().combined;
    txn_steps += s.write_combiner().stats().txn_attempts;
    batches += s.read_batch_stats().batches;
    batched += s.read_batch_stats().batched;
  }
};

class RespPipelineDiffTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(RespPipelineDiffTest, PipelinedRepliesAndContentsEqualOneAtATime) {
  const auto [focused, delays] = GetParam();
  const size_t commands = EnvInt("FARM_DIFF_COMMANDS", 2000);
  Coverage coverage;
  for (uint64_t seed : Seeds({1, 2, 3, 4, 5})) {
    SCOPED_TRACE(absl::StrCat("seed ", seed, " (replay: FARM_DIFF_SEED=", seed, ")"));
    Rng rng(seed);
    const std::vector<Words> sequence = RandomSequence(rng, commands, {.focused_percent = focused});

    SessionEnv reference_env(delays ? RandomDelays(seed) : FakeStoreOptions{});
    auto reference = reference_env.NewSession();
    const std::string expected = OneAtATime(reference_env, *reference, sequence);

    // As one write, then again in random pieces with the loop run in between.
    for (bool pieces : {false, true}) {
      SCOPED_TRACE(pieces ? "in pieces" : "as one write");
      SessionEnv env(delays ? RandomDelays(seed + 100) : FakeStoreOptions{});
      auto session = env.NewSession();
      const std::string pipeline = Pipeline(sequence);
      std::string got;
      for (size_t at = 0; at < pipeline.size();) {
        const size_t n = pieces ? std::uniform_int_distribution<size_t>(1, 3000)(rng) : pipeline.size();
        session->Feed(absl::string_view(pipeline).substr(at, n));
        at += n;
        env.loop().RunOnce();
        absl::StrAppend(&got, session->output());
        session->ConsumeOutput(session->output().size());
      }
      ASSERT_TRUE(env.Drain());
      absl::StrAppend(&got, session->output());
      ExpectSameReplies(sequence, expected, got);
      EXPECT_EQ(Contents(env, ""), Contents(reference_env, ""));
      coverage.Add(*session);
    }
  }
  // The pipelines did run as batches: otherwise this test would check nothing new.
  EXPECT_GT(coverage.batches, 0u);
  EXPECT_GT(coverage.batched, 2 * coverage.batches);
  if (focused > 0) {
    EXPECT_GT(coverage.combined_writes, 100u);
    EXPECT_GT(coverage.txn_steps, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, RespPipelineDiffTest,
                         ::testing::Combine(::testing::Values(0, 60), ::testing::Bool()),
                         [](const auto& info) {
                           return absl::StrCat(std::get<0>(info.param) ? "Focused" : "Uniform",
                                               std::get<1>(info.param) ? "Delayed" : "Immediate");
                         });

// Two clients of one worker thread pipeline at once, on keys of their own, through one
// WriteCombiner: each gets what it gets alone, one command at a time.
TEST(RespPipelineDiffSharedTest, TwoSessionsSharingACombinerEachGetWhatTheyGetAlone) {
  const size_t commands = EnvInt("FARM_DIFF_COMMANDS", 2000);
  Coverage coverage;
  for (uint64_t seed : Seeds({21, 22, 23})) {
    SCOPED_TRACE(absl::StrCat("seed ", seed, " (replay: FARM_DIFF_SEED=", seed, ")"));
    Rng rng(seed);
    std::vector<Words> sequence[2];
    std::string expected[2];
    for (int c = 0; c < 2; ++c) {
      const RandomCommandOptions options{.key_prefix = c == 0 ? "a:" : "b:", .store_wide = false,
                                         .focused_percent = 50};
      sequence[c] = RandomSequence(rng, commands, options);
      SessionEnv reference_env(RandomDelays(seed + c));
      auto reference = reference_env.NewSession();
      expected[c] = OneAtATime(reference_env, *reference, sequence[c]);
    }
    SessionEnv env(RandomDelays(seed + 10));
    RespSessionOptions options;
    options.write_combiner = WriteCombiner::Create(&env.store(), options.max_txn_attempts);
    std::shared_ptr<RespSession> session[2] = {env.NewSession(options), env.NewSession(options)};
    std::string pipeline[2] = {Pipeline(sequence[0]), Pipeline(sequence[1])};
    std::string got[2];
    size_t at[2] = {0, 0};
    while (at[0] < pipeline[0].size() || at[1] < pipeline[1].size()) {
      for (int c = 0; c < 2; ++c) {
        const size_t n = std::uniform_int_distribution<size_t>(1, 2000)(rng);
        if (at[c] < pipeline[c].size()) session[c]->Feed(absl::string_view(pipeline[c]).substr(at[c], n));
        at[c] += n;
      }
      env.loop().RunOnce();
      for (int c = 0; c < 2; ++c) {
        absl::StrAppend(&got[c], session[c]->output());
        session[c]->ConsumeOutput(session[c]->output().size());
      }
    }
    ASSERT_TRUE(env.Drain());
    for (int c = 0; c < 2; ++c) {
      SCOPED_TRACE(absl::StrCat("client ", c));
      absl::StrAppend(&got[c], session[c]->output());
      ExpectSameReplies(sequence[c], expected[c], got[c]);
    }
    coverage.Add(*session[0]);  // the combiner's figures cover both sessions
  }
  EXPECT_GT(coverage.combined_writes, 100u);
}

}  // namespace
}  // namespace farm::kv::resp
