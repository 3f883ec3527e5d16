// RespSession on a FakeStore: SCAN, KEYS, FLUSHALL and FLUSHDB (keyspace_commands.h) —
// whole scans, MATCH, COUNT, TYPE, Redis 7.0's argument errors, store errors, inside
// MULTI/EXEC — and the glob matcher (glob_match.h) on Redis's own cases. The patterns
// are checked against redis-server by resp_redis_diff_test.cc too.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv/resp/glob_match.h"
#include "kv/resp/resp_session.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::SessionEnv;
using ::testing::ElementsAre;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAreArray;
using Replies = std::vector<std::string>;

// A decoded SCAN reply "[cursor, [k1, k2]]" (keys without ", " or brackets).
struct ScanPage {
  std::string cursor;
  std::vector<std::string> keys;
};

ScanPage ParseScanReply(const std::string& decoded) {
  ScanPage page;
  EXPECT_THAT(decoded, StartsWith("["));
  const size_t comma = decoded.find(", [");
  if (comma == std::string::npos || decoded.size() < comma + 5) {
    ADD_FAILURE() << "not a SCAN reply: " << decoded;
    return page;
  }
  page.cursor = decoded.substr(1, comma - 1);
  const std::string keys = decoded.substr(comma + 3, decoded.size() - comma - 5);
  if (!keys.empty()) page.keys = absl::StrSplit(keys, ", ");
  return page;
}

class RespKeyspaceTest : public ::testing::Test {
 protected:
  void SetUp() override { session_ = env_.NewSession(); }
  Replies Run(std::vector<std::string> words) { return env_.Command(*session_, std::move(words)); }

  // Every page of SCAN with `options` from cursor 0; the pages' count in *pages.
  std::vector<std::string> ScanAll(std::vector<std::string> options, int* pages = nullptr) {
    std::vector<std::string> keys;
    std::string cursor = "0";
    int n = 0;
    do {
      std::vector<std::string> words = {"SCAN", cursor};
      words.insert(words.end(), options.begin(), options.end());
      Replies r = Run(words);
      if (r.size() != 1) {
        ADD_FAILURE() << "no reply";
        break;
      }
      ScanPage page = ParseScanReply(r[0]);
      keys.insert(keys.end(), page.keys.begin(), page.keys.end());
      cursor = page.cursor;
      ++n;
    } while (cursor != "0" && n < 100000);
    if (pages != nullptr) *pages = n;
    return keys;
  }

  SessionEnv env_;
  std::shared_ptr<RespSession> session_;
};

TEST_F(RespKeyspaceTest, AWholeScanReturnsEveryKeyOnce) {
  EXPECT_THAT(ScanAll({}), ElementsAre());
  std::vector<std::string> keys;
  for (int i = 0; i < 500; ++i) {
    keys.push_back(absl::StrCat("key", i));
    ASSERT_THAT(Run({"SET", keys.back(), "v"}), ElementsAre("+OK"));
  }
  int pages = 0;
  EXPECT_THAT(ScanAll({}, &pages), UnorderedElementsAreArray(keys));
  EXPECT_GT(pages, 50);  // COUNT 10: a window of 5 of the fake's 1,024 home buckets
  EXPECT_THAT(ScanAll({"COUNT", "100000"}, &pages), UnorderedElementsAreArray(keys));
  EXPECT_EQ(pages, 1);  // the fake's window has no cap
  EXPECT_THAT(ScanAll({"count", "1"}), UnorderedElementsAreArray(keys));
}

TEST_F(RespKeyspaceTest, MatchAndTypeFilterEachPage) {
  for (int i = 0; i < 30; ++i) {
    ASSERT_THAT(Run({"SET", absl::StrCat("user:", i), "v"}), ElementsAre("+OK"));
    ASSERT_THAT(Run({"HSET", absl::StrCat("hash:", i), "f", "v"}), ElementsAre(":1"));
  }
  std::vector<std::string> users, hashes;
  for (int i = 0; i < 30; ++i) {
    users.push_back(absl::StrCat("user:", i));
    hashes.push_back(absl::StrCat("hash:", i));
  }
  EXPECT_THAT(ScanAll({"MATCH", "user:*"}), UnorderedElementsAreArray(users));
  EXPECT_THAT(
      ScanAll({"MATCH", "user:?", "COUNT", "1000"}),
      UnorderedElementsAreArray(std::vector<std::string>(users.begin(), users.begin() + 10)));
  EXPECT_THAT(ScanAll({"TYPE", "hash"}), UnorderedElementsAreArray(hashes));
  EXPECT_THAT(ScanAll({"TYPE", "STRING", "MATCH", "*"}), UnorderedElementsAreArray(users));
  EXPECT_THAT(ScanAll({"TYPE", "zset"}), ElementsAre());  // a type no key has: nothing
  EXPECT_THAT(ScanAll({"MATCH", "hash:1*", "TYPE", "string"}), ElementsAre());
  Replies twenties = Run({"KEYS", "hash:2?"});
  ASSERT_EQ(twenties.size(), 1u);
  EXPECT_THAT(twenties[0], StartsWith("[hash:2"));
  EXPECT_EQ(std::count(twenties[0].begin(), twenties[0].end(), ','), 9) << twenties[0];
  Replies all = Run({"KEYS", "*"});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(std::count(all[0].begin(), all[0].end(), ','), 59) << all[0];
  EXPECT_THAT(Run({"KEYS", "nothing*"}), ElementsAre("[]"));
  EXPECT_THAT(Run({"KEYS", "user:7"}), ElementsAre("[user:7]"));
}

TEST_F(RespKeyspaceTest, ArgumentErrorsAsRedis) {
  EXPECT_THAT(Run({"SCAN"}), ElementsAre("-ERR wrong number of arguments for 'scan' command"));
  EXPECT_THAT(Run({"SCAN", "x"}), ElementsAre("-ERR invalid cursor"));
  EXPECT_THAT(Run({"SCAN", "18446744073709551616"}), ElementsAre("-ERR invalid cursor"));
  EXPECT_THAT(Run({"SCAN", " 1"}), ElementsAre("-ERR invalid cursor"));
  EXPECT_THAT(Run({"SCAN", "1.5"}), ElementsAre("-ERR invalid cursor"));
  EXPECT_THAT(Run({"SCAN", "0", "COUNT"}), ElementsAre("-ERR syntax error"));
  EXPECT_THAT(Run({"SCAN", "0", "COUNT", "0"}), ElementsAre("-ERR syntax error"));
  EXPECT_THAT(Run({"SCAN", "0", "COUNT", "x"}),
              ElementsAre("-ERR value is not an integer or out of range"));
  EXPECT_THAT(Run({"SCAN", "0", "BOGUS", "1"}), ElementsAre("-ERR syntax error"));
  EXPECT_THAT(Run({"SCAN", "0", "MATCH"}), ElementsAre("-ERR syntax error"));
  // strtoul's forms, as Redis 7.0 takes them ("" is 0, "-1" the largest); far cursors
  // end the scan.
  EXPECT_THAT(Run({"SCAN", "+5"}), ElementsAre(StartsWith("[")));
  EXPECT_THAT(Run({"SCAN", "007"}), ElementsAre(StartsWith("[")));
  EXPECT_THAT(Run({"SCAN", ""}), ElementsAre(StartsWith("[")));
  EXPECT_THAT(Run({"SCAN", "-1"}), ElementsAre("[0, []]"));
  EXPECT_THAT(Run({"SCAN", "18446744073709551615"}), ElementsAre("[0, []]"));
  EXPECT_THAT(Run({"KEYS"}), ElementsAre("-ERR wrong number of arguments for 'keys' command"));
  EXPECT_THAT(Run({"KEYS", "a", "b"}),
              ElementsAre("-ERR wrong number of arguments for 'keys' command"));
  EXPECT_THAT(Run({"FLUSHALL", "NOW"}), ElementsAre("-ERR syntax error"));
  EXPECT_THAT(Run({"FLUSHDB", "SYNC", "ASYNC"}), ElementsAre("-ERR syntax error"));
}

// COMMAND describes them as Redis does: the scans read, the flushes write.
TEST_F(RespKeyspaceTest, CommandDescribesThem) {
  EXPECT_THAT(
      Run({"COMMAND", "INFO", "scan", "keys", "flushall", "flushdb", "hscan", "rename", "copy"}),
      ElementsAre("[[scan, :-2, [+readonly], :0, :0, :0, [], [], [], []], "
                  "[keys, :2, [+readonly], :0, :0, :0, [], [], [], []], "
                  "[flushall, :-1, [+write], :0, :0, :0, [], [], [], []], "
                  "[flushdb, :-1, [+write], :0, :0, :0, [], [], [], []], "
                  "[hscan, :-3, [+readonly], :1, :1, :1, [], [], [], []], "
                  "[rename, :3, [+write], :1, :2, :1, [], [], [], []], "
                  "[copy, :-3, [+write], :1, :2, :1, [], [], [], []]]"));
}

TEST_F(RespKeyspaceTest, FlushRemovesEveryKey) {
  for (int i = 0; i < 300; ++i)
    ASSERT_THAT(Run({"SET", absl::StrCat("k", i), "v"}), ElementsAre("+OK"));
  ASSERT_THAT(Run({"HSET", "h", "f", "v"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"DBSIZE"}), ElementsAre(":301"));
  EXPECT_THAT(Run({"FLUSHALL"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"DBSIZE"}), ElementsAre(":0"));
  EXPECT_THAT(Run({"GET", "k7"}), ElementsAre("(nil)"));
  for (const char* mode : {"sync", "ASYNC"}) {
    ASSERT_THAT(Run({"SET", "a", "1"}), ElementsAre("+OK"));
    EXPECT_THAT(Run({"FLUSHDB", mode}), ElementsAre("+OK"));
    EXPECT_THAT(Run({"EXISTS", "a"}), ElementsAre(":0"));
  }
  EXPECT_THAT(Run({"FLUSHALL"}), ElementsAre("+OK"));  // an empty store
}

TEST_F(RespKeyspaceTest, StoreErrorsAreReplies) {
  ASSERT_THAT(Run({"SET", "a", "1"}), ElementsAre("+OK"));
  env_.cluster().InjectError(absl::UnavailableError("node 3 did not answer"));
  EXPECT_THAT(Run({"SCAN", "0"}), ElementsAre("-ERR a node did not answer"));
  env_.cluster().InjectError(absl::UnavailableError("node 3 did not answer"));
  EXPECT_THAT(Run({"KEYS", "*"}), ElementsAre("-ERR a node did not answer"));
  env_.cluster().InjectError(absl::UnavailableError("node 3 did not answer"));
  EXPECT_THAT(Run({"FLUSHALL"}), ElementsAre("-ERR a node did not answer"));
  EXPECT_THAT(Run({"GET", "a"}), ElementsAre("1"));  // nothing removed
  EXPECT_THAT(Run({"PING"}), ElementsAre("+PONG"));  // the connection goes on
}

TEST_F(RespKeyspaceTest, RefusedInsideMulti) {
  ASSERT_THAT(Run({"SET", "a", "1"}), ElementsAre("+OK"));
  for (const char* command : {"KEYS", "SCAN", "FLUSHALL", "FLUSHDB"}) {
    EXPECT_THAT(Run({"MULTI"}), ElementsAre("+OK"));
    EXPECT_THAT(Run({"SET", "b", "2"}), ElementsAre("+QUEUED"));
    std::vector<std::string> words = {command};
    if (words[0] == "KEYS") words.push_back("*");
    if (words[0] == "SCAN") words.push_back("0");
    EXPECT_THAT(Run(words),
                ElementsAre(absl::StrCat("-ERR ", command, " cannot be queued in MULTI")));
    EXPECT_THAT(Run({"EXEC"}),
                ElementsAre("-EXECABORT Transaction discarded because of previous errors."));
  }
  EXPECT_THAT(Run({"EXISTS", "a", "b"}), ElementsAre(":1"));
}

// Redis's stringmatchlen on the cases of its own tests (tests/unit/keyspace.tcl and
// util.c), and the edges of sets and escapes.
TEST(GlobMatchTest, MatchesAsRedis) {
  struct Case {
    const char* pattern;
    const char* s;
    bool match;
  };
  const Case cases[] = {
      {"*", "anything", true},
      {"*", "", false},
      {"", "", true},
      {"a*", "abc", true},
      {"a*", "ba", false},
      {"*c", "abc", true},
      {"a*c", "ac", true},
      {"a*c", "abdc", true},
      {"a*c", "abd", false},
      {"?", "a", true},
      {"?", "", false},
      {"??", "a", false},
      {"h?llo", "hello", true},
      {"h*llo", "hllo", true},
      {"h[ae]llo", "hallo", true},
      {"h[ae]llo", "hillo", false},
      {"h[^e]llo", "hallo", true},
      {"h[^e]llo", "hello", false},
      {"h[a-b]llo", "hbllo", true},
      {"h[b-a]llo", "hallo", true},
      {"h[a-b]llo", "hcllo", false},
      {"a\\*b", "a*b", true},
      {"a\\*b", "axb", false},
      {"a\\", "a\\", true},
      {"[\\]]", "]", true},
      {"[abc", "b", true},
      {"[abc", "[", false},
      {"[]", "]", false},
      {"a[", "a", false},
      {"**", "x", true},
      {"a**b", "ab", true},
      {"*a*b*", "xaxbx", true},
      {"[-a]", "-", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GlobMatch(c.pattern, c.s), c.match)
        << "'" << c.pattern << "' against '" << c.s << "'";
  }
  // Binary-safe, and bytes over 0x7f compare as signed chars in ranges (as Redis).
  EXPECT_TRUE(GlobMatch(std::string("a\0*", 3), std::string("a\0bc", 4)));
  EXPECT_TRUE(GlobMatch("[\x80-\x7f]", "\xff"));
  EXPECT_FALSE(GlobMatch("[\x01-\x7f]", "\xff"));
  // A long run of stars against a string that never matches stays fast.
  const std::string stars = "a" + std::string(40, '*') + "a*a*a*a*a*a*a*a*a*a*b";
  EXPECT_FALSE(GlobMatch(stars, std::string(4000, 'a')));
  // Stars nested 1,000 deep at most: a deeper match answers no match, with a bounded stack.
  std::string deep;
  for (int i = 0; i < 3000; ++i) deep += "*a";
  EXPECT_FALSE(GlobMatch(deep, std::string(48 << 10, 'a')));
  std::string shallow;
  for (int i = 0; i < 900; ++i) shallow += "*a";
  EXPECT_TRUE(GlobMatch(shallow, std::string(4000, 'a')));
}

}  // namespace
}  // namespace farm::kv::resp
