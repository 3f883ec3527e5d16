// RespSession on a FakeStore: the hash commands and typed values — semantics and Redis
// 7's error texts, WRONGTYPE both ways, the 0xFF escape, corrupt encodings, limits,
// MULTI/EXEC, WATCH, pipelining and concurrent writers. (Checked against redis-server
// 7.0 by hand and by resp_redis_diff_test.cc.)
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv/resp/resp_session.h"
#include "kv/resp/typed_value.h"
#include "tests/kv/resp/resp_reply_reader.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::FakeStoreOptions;
using ::farm::kv::testing::SessionEnv;
using ::testing::ElementsAre;
using ::testing::StartsWith;
using Replies = std::vector<std::string>;

constexpr char kWrongType[] = "-WRONGTYPE Operation against a key holding the wrong kind of value";

class RespHashTest : public ::testing::Test {
 protected:
  explicit RespHashTest(FakeStoreOptions store = {}) : env_(std::move(store)) {}
  void SetUp() override {
    a_ = env_.NewSession();
    b_ = env_.NewSession();
  }
  Replies Run(std::vector<std::string> words) { return env_.Command(*a_, std::move(words)); }
  Replies B(std::vector<std::string> words) { return env_.Command(*b_, std::move(words)); }

  SessionEnv env_;
  std::shared_ptr<RespSession> a_, b_;
};

TEST_F(RespHashTest, SetGetAndReadCommands) {
  EXPECT_THAT(Run({"HSET", "h", "a", "1", "b", "2"}), ElementsAre(":2"));
  EXPECT_THAT(Run({"HSET", "h", "a", "10", "c", "3"}), ElementsAre(":1"));  // a updated
  EXPECT_THAT(Run({"HSET", "h", "d", "x", "d", "y"}), ElementsAre(":1"));   // last one wins
  EXPECT_THAT(Run({"HGET", "h", "a"}), ElementsAre("10"));
  EXPECT_THAT(Run({"HGET", "h", "d"}), ElementsAre("y"));
  EXPECT_THAT(Run({"HGET", "h", "nope"}), ElementsAre("(nil)"));
  EXPECT_THAT(Run({"HGET", "missing", "a"}), ElementsAre("(nil)"));
  // Insertion order; an update keeps its field's place (as Redis's listpack hashes).
  EXPECT_THAT(Run({"HGETALL", "h"}), ElementsAre("[a, 10, b, 2, c, 3, d, y]"));
  EXPECT_THAT(Run({"HGETALL", "missing"}), ElementsAre("[]"));
  EXPECT_THAT(Run({"HMGET", "h", "c", "nope", "a"}), ElementsAre("[3, (nil), 10]"));
  EXPECT_THAT(Run({"HMGET", "missing", "a", "b"}), ElementsAre("[(nil), (nil)]"));
  EXPECT_THAT(Run({"HLEN", "h"}), ElementsAre(":4"));
  EXPECT_THAT(Run({"HLEN", "missing"}), ElementsAre(":0"));
  EXPECT_THAT(Run({"HEXISTS", "h", "b"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"HEXISTS", "h", "B"}), ElementsAre(":0"));
  EXPECT_THAT(Run({"HEXISTS", "missing", "b"}), ElementsAre(":0"));
  EXPECT_THAT(Run({"TYPE", "h"}), ElementsAre("+hash"));
  EXPECT_THAT(Run({"EXISTS", "h", "missing"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"DBSIZE"}), ElementsAre(":1"));
}

TEST_F(RespHashTest, HMSetAndYcsbRecords) {
  std::vector<std::string> hmset = {"HMSET", "user1"};
  std::vector<std::string> hmget = {"HMGET", "user1"};
  std::string all = "[";
  for (int i = 0; i < 10; ++i) {
    hmset.push_back(absl::StrCat("field", i));
    hmset.push_back(std::string(100, static_cast<char>('a' + i)));
    hmget.push_back(absl::StrCat("field", i));
    absl::StrAppend(&all, i == 0 ? "" : ", ", "field", i, ", ", std::string(100, 'a' + i));
  }
  all += "]";
  EXPECT_THAT(Run(hmset), ElementsAre("+OK"));
  EXPECT_THAT(Run({"HGETALL", "user1"}), ElementsAre(all));
  Replies got = Run(hmget);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], StartsWith(absl::StrCat("[", std::string(100, 'a'), ", ")));
  EXPECT_THAT(Run({"HMSET", "user1", "field3", "new"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"HGET", "user1", "field3"}), ElementsAre("new"));
  EXPECT_THAT(Run({"HLEN", "user1"}), ElementsAre(":10"));
  EXPECT_THAT(Run({"DEL", "user1"}), ElementsAre(":1"));
  EXPECT_FALSE(env_.cluster().Peek("user1").has_value());
}

TEST_F(RespHashTest, ManyFields) {
  // Past the size where lookups switch from a scan to an index.
  std::vector<std::string> hset = {"HSET", "big"};
  for (int i = 0; i < 300; ++i) {
    hset.push_back(absl::StrCat("f", i));
    hset.push_back(absl::StrCat("v", i));
  }
  EXPECT_THAT(Run(hset), ElementsAre(":300"));
  EXPECT_THAT(Run({"HSET", "big", "f7", "x", "f299", "y", "f300", "z"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"HDEL", "big", "f0", "f1", "f0", "nope"}), ElementsAre(":2"));
  EXPECT_THAT(Run({"HSET", "big", "f2", "again", "f0", "back"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"HLEN", "big"}), ElementsAre(":300"));
  EXPECT_THAT(Run({"HMGET", "big", "f7", "f299", "f300", "f0", "f1", "f2"}),
              ElementsAre("[x, y, z, back, (nil), again]"));
  EXPECT_THAT(Run({"HINCRBY", "big", "f150", "1"}),
              ElementsAre("-ERR hash value is not an integer"));
}

TEST_F(RespHashTest, HDelRemovesFieldsAndTheLastOneTheKey) {
  Run({"HSET", "h", "a", "1", "b", "2", "c", "3"});
  EXPECT_THAT(Run({"HDEL", "h", "a", "a", "nope"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"HGETALL", "h"}), ElementsAre("[b, 2, c, 3]"));
  EXPECT_THAT(Run({"HDEL", "h", "nope"}), ElementsAre(":0"));
  EXPECT_THAT(Run({"HSET", "h", "a", "again"}), ElementsAre(":1"));  // back at the end
  EXPECT_THAT(Run({"HGETALL", "h"}), ElementsAre("[b, 2, c, 3, a, again]"));
  EXPECT_THAT(Run({"HDEL", "h", "b", "c", "a"}), ElementsAre(":3"));
  EXPECT_THAT(Run({"EXISTS", "h"}), ElementsAre(":0"));
  EXPECT_FALSE(env_.cluster().Peek("h").has_value());
  EXPECT_THAT(Run({"TYPE", "h"}), ElementsAre("+none"));
  EXPECT_THAT(Run({"HDEL", "h", "a"}), ElementsAre(":0"));
}

TEST_F(RespHashTest, HIncrBy) {
  EXPECT_THAT(Run({"HINCRBY", "h", "n", "5"}), ElementsAre(":5"));
  EXPECT_THAT(Run({"HINCRBY", "h", "n", "-7"}), ElementsAre(":-2"));
  EXPECT_THAT(Run({"HGET", "h", "n"}), ElementsAre("-2"));
  EXPECT_THAT(Run({"HINCRBY", "h", "n", "x"}),
              ElementsAre("-ERR value is not an integer or out of range"));
  EXPECT_THAT(Run({"HINCRBY", "h", "n", "9223372036854775808"}),
              ElementsAre("-ERR value is not an integer or out of range"));
  Run({"HSET", "h", "max", "9223372036854775807", "min", "-9223372036854775808"});
  EXPECT_THAT(Run({"HINCRBY", "h", "max", "1"}),
              ElementsAre("-ERR increment or decrement would overflow"));
  EXPECT_THAT(Run({"HINCRBY", "h", "min", "-1"}),
              ElementsAre("-ERR increment or decrement would overflow"));
  EXPECT_THAT(Run({"HINCRBY", "h", "max", "0"}), ElementsAre(":9223372036854775807"));
  // Redis's string2ll: no sign but '-', no leading zeros, no spaces, not "-0".
  for (const char* bad : {"abc", "", "-0", "01", " 1", "1 ", "+1", "1.5", "99999999999999999999"}) {
    Run({"HSET", "h", "bad", bad});
    EXPECT_THAT(Run({"HINCRBY", "h", "bad", "1"}), ElementsAre("-ERR hash value is not an integer"))
        << "'" << bad << "'";
  }
  EXPECT_THAT(Run({"HGETALL", "h"}),
              ElementsAre("[n, -2, max, 9223372036854775807, min, -9223372036854775808, bad, "
                          "99999999999999999999]"));
}

TEST_F(RespHashTest, ArityErrorsInRedisWords) {
  const std::vector<std::vector<std::string>> cases = {
      {"HSET", "h", "a"},
      {"HSET", "h", "a", "1", "b"},
      {"HMSET", "h", "a"},
      {"HMSET", "h", "a", "1", "b"},
      {"HGET", "h"},
      {"HGET", "h", "a", "b"},
      {"HMGET", "h"},
      {"HGETALL"},
      {"HGETALL", "h", "x"},
      {"HDEL", "h"},
      {"HLEN", "h", "x"},
      {"HEXISTS", "h"},
      {"HINCRBY", "h", "a"},
      {"HINCRBY", "h", "a", "1", "2"},
      {"TYPE"},
  };
  for (const auto& words : cases) {
    std::string name = words[0];
    for (char& c : name) c = static_cast<char>(std::tolower(c));
    EXPECT_THAT(Run(words), ElementsAre(absl::StrCat("-ERR wrong number of arguments for '", name,
                                                     "' command")));
  }
  EXPECT_EQ(env_.cluster().Stats().keys, 0u);
}

TEST_F(RespHashTest, WrongTypeBothWays) {
  Run({"SET", "s", "str"});
  Run({"HSET", "h", "f", "v"});
  // Hash commands on a string.
  for (const auto& words : std::vector<std::vector<std::string>>{{"HSET", "s", "f", "v"},
                                                                 {"HMSET", "s", "f", "v"},
                                                                 {"HGET", "s", "f"},
                                                                 {"HMGET", "s", "f"},
                                                                 {"HGETALL", "s"},
                                                                 {"HDEL", "s", "f"},
                                                                 {"HLEN", "s"},
                                                                 {"HEXISTS", "s", "f"},
                                                                 {"HINCRBY", "s", "f", "1"}}) {
    EXPECT_THAT(Run(words), ElementsAre(kWrongType)) << words[0];
  }
  EXPECT_EQ(env_.cluster().Peek("s"), "str");
  // Argument errors come first, as in Redis.
  EXPECT_THAT(Run({"HINCRBY", "s", "f", "x"}),
              ElementsAre("-ERR value is not an integer or out of range"));
  EXPECT_THAT(Run({"HSET", "s", "f"}),
              ElementsAre("-ERR wrong number of arguments for 'hset' command"));
  // String commands on a hash.
  for (const auto& words : std::vector<std::vector<std::string>>{{"GET", "h"},
                                                                 {"INCR", "h"},
                                                                 {"DECR", "h"},
                                                                 {"INCRBY", "h", "2"},
                                                                 {"DECRBY", "h", "2"},
                                                                 {"SET", "h", "x", "GET"},
                                                                 {"SET", "h", "x", "NX", "GET"},
                                                                 {"SET", "h", "x", "XX", "GET"}}) {
    EXPECT_THAT(Run(words), ElementsAre(kWrongType)) << words[0];
  }
  EXPECT_THAT(Run({"INCRBY", "h", "x"}),
              ElementsAre("-ERR value is not an integer or out of range"));
  EXPECT_THAT(Run({"SET", "h", "x", "NX"}), ElementsAre("(nil)"));  // exists: not set
  EXPECT_THAT(Run({"HGET", "h", "f"}), ElementsAre("v"));           // nothing above changed it
  EXPECT_THAT(Run({"MGET", "s", "h", "missing"}), ElementsAre("[str, (nil), (nil)]"));
  EXPECT_THAT(Run({"EXISTS", "s", "h"}), ElementsAre(":2"));
  EXPECT_THAT(Run({"TYPE", "s"}), ElementsAre("+string"));
  // SET and MSET overwrite any type.
  EXPECT_THAT(Run({"SET", "h", "now a string", "XX"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"GET", "h"}), ElementsAre("now a string"));
  Run({"HSET", "h2", "f", "v"});
  EXPECT_THAT(Run({"MSET", "h2", "x", "s", "y"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"MGET", "h2", "s"}), ElementsAre("[x, y]"));
  Run({"HSET", "h3", "f", "v"});
  EXPECT_THAT(Run({"DEL", "h3", "s", "missing"}), ElementsAre(":2"));
}

TEST_F(RespHashTest, StringsBeginningWith0xFFRoundTrip) {
  const std::string ff = "\xFF";
  const std::string looks_like_hash =
      "\xFFH\x01\x01\x01"
      "a\x01"
      "b";  // a valid encoding
  const std::string values[] = {ff, ff + ff, ff + "rest", looks_like_hash, ff + "Z"};
  for (const std::string& v : values) {
    EXPECT_THAT(Run({"SET", "k", v}), ElementsAre("+OK"));
    EXPECT_THAT(Run({"GET", "k"}), ElementsAre(v));
    EXPECT_EQ(env_.cluster().Peek("k"), ff + v);  // stored escaped
    EXPECT_THAT(Run({"TYPE", "k"}), ElementsAre("+string"));
    EXPECT_THAT(Run({"INCR", "k"}), ElementsAre("-ERR value is not an integer or out of range"));
    EXPECT_THAT(Run({"HGET", "k", "a"}), ElementsAre(kWrongType));
  }
  EXPECT_THAT(Run({"SET", "k", "plain", "GET"}), ElementsAre(ff + "Z"));
  EXPECT_EQ(env_.cluster().Peek("k"), "plain");  // ordinary strings as they are
  EXPECT_THAT(Run({"SET", "k", looks_like_hash, "GET"}), ElementsAre("plain"));
  EXPECT_THAT(Run({"MSET", "m1", ff, "m2", "x"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"MGET", "k", "m1", "m2"}),
              ElementsAre(absl::StrCat("[", looks_like_hash, ", ", ff, ", x]")));
  EXPECT_THAT(Run({"SET", "m1", "", "XX"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"GET", "m1"}), ElementsAre(""));
  // Inside a hash nothing is escaped: fields and values are length-prefixed.
  EXPECT_THAT(Run({"HSET", "h", ff, looks_like_hash}), ElementsAre(":1"));
  EXPECT_THAT(Run({"HGETALL", "h"}),
              ElementsAre(absl::StrCat("[", ff, ", ", looks_like_hash, "]")));
}

TEST_F(RespHashTest, CorruptStoredValuesGiveErrorsNotCrashes) {
  const std::string valid = EncodeHash({{"a", "1"}, {"b", "2"}});
  env_.cluster().Poke("ok", valid);
  EXPECT_THAT(Run({"HGETALL", "ok"}), ElementsAre("[a, 1, b, 2]"));
  struct Case {
    std::string stored;
    bool hash_tag;  // the type tag is a hash's: GET says WRONGTYPE, TYPE says hash
  };
  const Case cases[] = {
      {"\xFF", false},   // a marker and no tag
      {"\xFFZ", false},  // an unknown tag
      {"\xFFH", true},   // no version
      {std::string("\xFFH\x02\x01\x01"
                   "a\x01"
                   "b",
                   8),
       true},                                     // a newer version
      {valid.substr(0, valid.size() - 1), true},  // cut short
      {valid + "x", true},                        // bytes after the last pair
      {std::string("\xFFH\x01\x00", 4), true},    // no fields
      {std::string("\xFFH\x01\x05\x01"
                   "a\x01"
                   "b",
                   8),
       true},  // a count too big
      {std::string("\xFFH\x01\x01\x7f"
                   "a\x01"
                   "b",
                   8),
       true},  // a size past the end
      {std::string("\xFFH\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 14),
       true},  // a varint over 64 bits
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.stored));
    env_.cluster().Poke("bad", c.stored);
    for (const auto& words : std::vector<std::vector<std::string>>{{"HGET", "bad", "zz"},
                                                                   {"HGETALL", "bad"},
                                                                   {"HMGET", "bad", "a"},
                                                                   {"HSET", "bad", "c", "3"},
                                                                   {"HDEL", "bad", "a"},
                                                                   {"HINCRBY", "bad", "n", "1"},
                                                                   {"HEXISTS", "bad", "zz"},
                                                                   {"HLEN", "bad"},
                                                                   {"GET", "bad"},
                                                                   {"TYPE", "bad"}}) {
      Replies r = Run(words);
      ASSERT_EQ(r.size(), 1u);
      if (c.hash_tag && words[0] == "GET") {
        EXPECT_EQ(r[0], kWrongType);
      } else if (c.hash_tag && words[0] == "TYPE") {
        EXPECT_EQ(r[0], "+hash");
      } else if (c.hash_tag && words[0] == "HLEN" && r[0][0] == ':') {
        // HLEN reads the header only: a body cut short or too long is seen by the others.
      } else {
        EXPECT_THAT(r[0], StartsWith("-ERR a stored ")) << words[0];
      }
    }
    EXPECT_EQ(env_.cluster().Peek("bad"), c.stored);  // no write went through
    EXPECT_THAT(Run({"MGET", "bad", "ok"}), ElementsAre("[(nil), (nil)]"));
  }
  env_.cluster().Poke("bad", std::string("\xFFH\x01\x01\x7f"
                                         "a\x01"
                                         "b",
                                         8));
  EXPECT_THAT(Run({"HGET", "bad", "a"}),
              ElementsAre("-ERR a stored hash is corrupt (pair 0 of 1 cut short)"));
  // SET and DEL still work on a corrupt value.
  EXPECT_THAT(Run({"SET", "bad", "fixed"}), ElementsAre("+OK"));
  env_.cluster().Poke("bad", "\xFFZ");
  EXPECT_THAT(Run({"DEL", "bad"}), ElementsAre(":1"));
}

TEST_F(RespHashTest, LimitsRefuseBigHashesAndStoreNothing) {
  SessionEnv small({}, {.max_key_bytes = 8, .max_value_bytes = 32});
  auto s = small.NewSession();
  // Marker, tag, version, count, then 1+6 + 1+20: 32 bytes, the limit.
  EXPECT_THAT(small.Command(*s, {"HSET", "h", "field1", std::string(20, 'v')}), ElementsAre(":1"));
  EXPECT_THAT(
      small.Command(*s, {"HSET", "h", "f2", "v"}),
      ElementsAre("-ERR value is too large (37 bytes as stored; this store's limit is 32)"));
  EXPECT_THAT(
      small.Command(*s, {"HINCRBY", "h", "n", "1"}),
      ElementsAre("-ERR value is too large (36 bytes as stored; this store's limit is 32)"));
  EXPECT_THAT(small.Command(*s, {"HGETALL", "h"}),
              ElementsAre(absl::StrCat("[field1, ", std::string(20, 'v'), "]")));
  EXPECT_THAT(
      small.Command(*s, {"HSET", "new", "f", std::string(40, 'v')}),
      ElementsAre("-ERR value is too large (47 bytes as stored; this store's limit is 32)"));
  EXPECT_FALSE(small.cluster().Peek("new").has_value());
  EXPECT_THAT(small.Command(*s, {"HSET", "123456789", "f", "v"}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
  EXPECT_THAT(small.Command(*s, {"HINCRBY", "123456789", "f", "1"}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
  // No such key can exist: the reads and HDEL answer as for a missing key.
  EXPECT_THAT(small.Command(*s, {"HGET", "123456789", "f"}), ElementsAre("(nil)"));
  EXPECT_THAT(small.Command(*s, {"HMGET", "123456789", "f", "g"}), ElementsAre("[(nil), (nil)]"));
  EXPECT_THAT(small.Command(*s, {"HGETALL", "123456789"}), ElementsAre("[]"));
  EXPECT_THAT(small.Command(*s, {"HLEN", "123456789"}), ElementsAre(":0"));
  EXPECT_THAT(small.Command(*s, {"HEXISTS", "123456789", "f"}), ElementsAre(":0"));
  EXPECT_THAT(small.Command(*s, {"HDEL", "123456789", "f"}), ElementsAre(":0"));
  // An escaped string is one byte longer than it looks.
  EXPECT_THAT(
      small.Command(*s, {"SET", "k", std::string(32, '\xFF')}),
      ElementsAre("-ERR value is too large (33 bytes as stored; this store's limit is 32)"));
  EXPECT_THAT(small.Command(*s, {"SET", "k", std::string(31, '\xFF')}), ElementsAre("+OK"));
  EXPECT_EQ(small.cluster().Stats().keys, 2u);
}

TEST_F(RespHashTest, StoreErrorsNameNoInternalAddress) {
  env_.cluster().InjectError(absl::UnavailableError("r12+0x1f00 in region 7 did not answer"));
  EXPECT_THAT(Run({"HGET", "h", "f"}), ElementsAre("-ERR an object in a region did not answer"));
  env_.cluster().InjectError(absl::UnavailableError("node 3 did not answer"), 100);
  EXPECT_THAT(Run({"HSET", "h", "f", "v"}), ElementsAre("-ERR a node did not answer"));
  env_.cluster().InjectError(absl::OkStatus(), 0);
  EXPECT_FALSE(env_.cluster().Peek("h").has_value());
  EXPECT_THAT(Run({"HSET", "h", "f", "v"}), ElementsAre(":1"));
}

// --- MULTI / EXEC / WATCH ---

TEST_F(RespHashTest, HashCommandsInsideExec) {
  Run({"SET", "s", "x"});
  EXPECT_EQ(env_.Exchange(*a_,
                          "MULTI\r\nHSET h a 1 b 2\r\nHINCRBY h a 5\r\nHGET h a\r\nHSET h c 3 d\r\n"
                          "HDEL h b\r\nHGETALL h\r\nHGET s a\r\nGET h\r\nHLEN h\r\nHEXISTS h b\r\n"
                          "HMGET h a b\r\nHMSET h d 4\r\nEXEC\r\n"),
            (Replies{"+OK", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED",
                     "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED",
                     absl::StrCat("[:2, :6, 6, -ERR wrong number of arguments for 'hset' command, "
                                  ":1, [a, 6], ",
                                  kWrongType, ", ", kWrongType, ", :1, :0, [6, (nil)], +OK]")}));
  EXPECT_THAT(Run({"HGETALL", "h"}), ElementsAre("[a, 6, d, 4]"));
  // HMSET with too few words fails its arity when queued, and EXEC aborts (as Redis).
  EXPECT_EQ(env_.Exchange(*a_, "MULTI\r\nHSET h e 5\r\nHMSET h q\r\nEXEC\r\n"),
            (Replies{"+OK", "+QUEUED", "-ERR wrong number of arguments for 'hmset' command",
                     "-EXECABORT Transaction discarded because of previous errors."}));
  EXPECT_THAT(Run({"HEXISTS", "h", "e"}), ElementsAre(":0"));
  // HDEL of the last field inside EXEC deletes the key at the commit.
  EXPECT_EQ(env_.Exchange(*a_, "MULTI\r\nHDEL h a d\r\nEXISTS h\r\nHSET h z 1\r\nEXEC\r\n"),
            (Replies{"+OK", "+QUEUED", "+QUEUED", "+QUEUED", "[:2, :0, :1]"}));
  EXPECT_THAT(Run({"HGETALL", "h"}), ElementsAre("[z, 1]"));
}

TEST_F(RespHashTest, ConcurrentHSetOfAWatchedKeyMakesExecNil) {
  Run({"HSET", "h", "f", "1"});
  EXPECT_THAT(Run({"WATCH", "h"}), ElementsAre("+OK"));
  EXPECT_THAT(B({"HSET", "h", "g", "2"}), ElementsAre(":1"));
  Run({"MULTI"});
  Run({"HSET", "h", "mine", "x"});
  Run({"SET", "other", "x"});
  EXPECT_THAT(Run({"EXEC"}), ElementsAre("(nil array)"));
  EXPECT_THAT(Run({"HGETALL", "h"}), ElementsAre("[f, 1, g, 2]"));
  EXPECT_FALSE(env_.cluster().Peek("other").has_value());
  // Unchanged, the same transaction commits.
  EXPECT_THAT(Run({"WATCH", "h"}), ElementsAre("+OK"));
  Run({"MULTI"});
  Run({"HINCRBY", "h", "f", "1"});
  EXPECT_THAT(Run({"EXEC"}), ElementsAre("[:2]"));
  // A read-only hash command of another session does not disturb it.
  EXPECT_THAT(Run({"WATCH", "h"}), ElementsAre("+OK"));
  EXPECT_THAT(B({"HGETALL", "h"}), ElementsAre("[f, 2, g, 2]"));
  Run({"MULTI"});
  Run({"HDEL", "h", "g"});
  EXPECT_THAT(Run({"EXEC"}), ElementsAre("[:1]"));
}

TEST_F(RespHashTest, HDelOfAWatchedKeyByAnotherSessionMakesExecNil) {
  Run({"HSET", "h", "f", "1"});
  Run({"WATCH", "h"});
  EXPECT_THAT(B({"HDEL", "h", "f"}), ElementsAre(":1"));
  Run({"MULTI"});
  Run({"HGET", "h", "f"});
  EXPECT_THAT(Run({"EXEC"}), ElementsAre("(nil array)"));
}

// --- Pipelining and concurrency ---

FakeStoreOptions SlowWrites() {
  FakeStoreOptions options;
  options.delay = [](absl::string_view op, absl::string_view key) {
    if (op == "commit" || op == "put") return absl::Milliseconds(5);
    return absl::ZeroDuration();
  };
  return options;
}

class RespHashPipelineTest : public RespHashTest {
 protected:
  RespHashPipelineTest() : RespHashTest(SlowWrites()) {}
};

TEST_F(RespHashPipelineTest, PipelinedMixSeesItsOwnWritesInOrder) {
  a_->Feed(
      "HSET h a 1\r\nHGET h a\r\nHINCRBY h a 2\r\nHGETALL h\r\nSET s x\r\nHGET s a\r\n"
      "HMSET h b 2\r\nHMGET h a b\r\nHDEL h a b\r\nHLEN h\r\nGET s\r\nEXISTS h\r\n");
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(testing::DecodeReplies(a_->output()).replies,
            (Replies{":1", "1", ":3", "[a, 3]", "+OK", kWrongType, "+OK", "[3, 2]", ":2", ":0", "x",
                     ":0"}));
}

TEST_F(RespHashPipelineTest, HashCommandsOnOtherKeysOverlap) {
  a_->Feed("HSET h1 a 1\r\nHSET h2 a 1\r\nHGET h3 a\r\nHGETALL h4\r\nHGET h1 a\r\n");
  EXPECT_EQ(a_->in_flight(), 4u);  // HGET h1 waits for HSET h1
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(testing::DecodeReplies(a_->output()).replies,
            (Replies{":1", ":1", "(nil)", "[]", "1"}));
}

TEST_F(RespHashPipelineTest, ConcurrentWritersOfOneHashLoseNothing) {
  // Each HSET / HINCRBY reads the whole hash and writes it back: overlapping commits
  // conflict, and the loser's transaction is retried on the winner's value.
  std::string a_cmds, b_cmds;
  for (int i = 0; i < 10; ++i) {
    absl::StrAppend(&a_cmds, "HSET h a", i, " x\r\nHINCRBY h n 1\r\n");
    absl::StrAppend(&b_cmds, "HSET h b", i, " y\r\nHINCRBY h n 1\r\n");
  }
  a_->Feed(a_cmds);
  b_->Feed(b_cmds);
  ASSERT_TRUE(env_.Drain(absl::Seconds(20)));
  for (RespSession* s : {a_.get(), b_.get()}) {
    const Replies replies = testing::DecodeReplies(s->output()).replies;
    ASSERT_EQ(replies.size(), 20u);
    for (size_t i = 0; i < replies.size(); i += 2) EXPECT_EQ(replies[i], ":1");  // a new field
    s->ConsumeOutput(s->output().size());
  }
  EXPECT_THAT(Run({"HLEN", "h"}), ElementsAre(":21"));
  EXPECT_THAT(Run({"HGET", "h", "n"}), ElementsAre("20"));
}

}  // namespace
}  // namespace farm::kv::resp
