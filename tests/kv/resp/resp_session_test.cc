// RespSession on a FakeStore: every command, errors, AUTH, pipelining and ordering,
// back-pressure, closing. (MULTI/EXEC/WATCH: resp_session_txn_test.cc.)
#include "kv/resp/resp_session.h"
#include "kv/resp/resp_commands.h"
#include "kv/resp/write_combiner.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kv/resp/resp_reply_reader.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::FakeStoreOptions;
using ::farm::kv::testing::Multibulk;
using ::farm::kv::testing::SessionEnv;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Replies = std::vector<std::string>;

class RespSessionTest : public ::testing::Test {
 protected:
  explicit RespSessionTest(FakeStoreOptions store = {},
                           StoreLimits limits = {.max_key_bytes = 1024, .max_value_bytes = 1 << 20})
      : env_(std::move(store), limits) {}
  void SetUp() override { session_ = env_.NewSession(Options()); }
  virtual RespSessionOptions Options() { return {}; }

  Replies Run(std::vector<std::string> words) { return env_.Command(*session_, std::move(words)); }
  Replies Send(absl::string_view bytes) { return env_.Exchange(*session_, bytes); }

  SessionEnv env_;
  std::shared_ptr<RespSession> session_;
};

TEST_F(RespSessionTest, PingAndEcho) {
  EXPECT_THAT(Run({"PING"}), ElementsAre("+PONG"));
  EXPECT_THAT(Run({"ping", "hello"}), ElementsAre("hello"));
  EXPECT_THAT(Run({"PING", "a", "b"}),
              ElementsAre("-ERR wrong number of arguments for 'ping' command"));
  EXPECT_THAT(Run({"ECHO", std::string("bin\r\n\0ary", 10)}),
              ElementsAre(std::string("bin\r\n\0ary", 10)));
  EXPECT_THAT(Run({"ECHO"}), ElementsAre("-ERR wrong number of arguments for 'echo' command"));
}

TEST_F(RespSessionTest, SetGet) {
  EXPECT_THAT(Run({"SET", "k", "v"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"GET", "k"}), ElementsAre("v"));
  EXPECT_THAT(Run({"GET", "missing"}), ElementsAre("(nil)"));
  EXPECT_THAT(Run({"SET", "empty", ""}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"GET", "empty"}), ElementsAre(""));
  EXPECT_THAT(Run({"set", "k", "v2"}), ElementsAre("+OK"));
  EXPECT_EQ(env_.cluster().Peek("k"), "v2");
  EXPECT_THAT(Run({"GET"}), ElementsAre("-ERR wrong number of arguments for 'get' command"));
  EXPECT_THAT(Run({"SET", "k"}), ElementsAre("-ERR wrong number of arguments for 'set' command"));
}

TEST_F(RespSessionTest, SetOptions) {
  EXPECT_THAT(Run({"SET", "k", "1", "NX"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"SET", "k", "2", "nx"}), ElementsAre("(nil)"));
  EXPECT_THAT(Run({"SET", "k", "3", "XX"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"SET", "other", "3", "XX"}), ElementsAre("(nil)"));
  EXPECT_THAT(Run({"SET", "k", "4", "GET"}), ElementsAre("3"));
  EXPECT_THAT(Run({"SET", "new", "5", "GET"}), ElementsAre("(nil)"));
  EXPECT_THAT(Run({"SET", "k", "6", "NX", "GET"}), ElementsAre("4"));  // not set
  EXPECT_THAT(Run({"GET", "k"}), ElementsAre("4"));
  EXPECT_THAT(Run({"SET", "k", "7", "NX", "XX"}), ElementsAre("-ERR syntax error"));
  EXPECT_THAT(Run({"SET", "k", "7", "FOO"}), ElementsAre("-ERR syntax error"));
  EXPECT_THAT(Run({"SET", "k", "7", "EX", "10"}),
              ElementsAre("-ERR syntax error: key expiry (EX, PX, EXAT, PXAT) is not supported"));
  EXPECT_THAT(Run({"GETEX", "k", "PX", "10"}),
              ElementsAre("-ERR syntax error: key expiry (EX, PX, EXAT, PXAT) is not supported"));
  EXPECT_THAT(Run({"TTL", "k"}), ElementsAre(":-1")) << "unchanged: no time to live";
  EXPECT_THAT(Run({"GET", "k"}), ElementsAre("4"));
  EXPECT_FALSE(env_.cluster().Peek("other").has_value());
}

TEST_F(RespSessionTest, DelAndExists) {
  Run({"MSET", "a", "1", "b", "2"});
  EXPECT_THAT(Run({"EXISTS", "a", "a", "b", "x"}), ElementsAre(":3"));
  EXPECT_THAT(Run({"DEL", "a", "a", "x"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"DEL", "b"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"DEL", "b"}), ElementsAre(":0"));
  EXPECT_THAT(Run({"EXISTS", "a", "b"}), ElementsAre(":0"));
  EXPECT_THAT(Run({"DEL"}), ElementsAre("-ERR wrong number of arguments for 'del' command"));
  EXPECT_THAT(Run({"EXISTS"}), ElementsAre("-ERR wrong number of arguments for 'exists' command"));
}

TEST_F(RespSessionTest, MSetMGet) {
  EXPECT_THAT(Run({"MSET", "a", "1", "b", "2", "a", "3"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"MGET", "a", "b", "c"}), ElementsAre("[3, 2, (nil)]"));
  EXPECT_THAT(Run({"MSET", "a"}), ElementsAre("-ERR wrong number of arguments for 'mset' command"));
  EXPECT_THAT(Run({"MSET", "a", "1", "b"}),
              ElementsAre("-ERR wrong number of arguments for 'mset' command"));
  EXPECT_THAT(Run({"MGET"}), ElementsAre("-ERR wrong number of arguments for 'mget' command"));
}

TEST_F(RespSessionTest, Increments) {
  EXPECT_THAT(Run({"INCR", "n"}), ElementsAre(":1"));
  EXPECT_THAT(Run({"INCRBY", "n", "10"}), ElementsAre(":11"));
  EXPECT_THAT(Run({"DECR", "n"}), ElementsAre(":10"));
  EXPECT_THAT(Run({"DECRBY", "n", "-5"}), ElementsAre(":15"));
  EXPECT_THAT(Run({"GET", "n"}), ElementsAre("15"));
  EXPECT_THAT(Run({"INCRBY", "n", "x"}),
              ElementsAre("-ERR value is not an integer or out of range"));
  EXPECT_THAT(Run({"INCRBY", "n", "01"}),
              ElementsAre("-ERR value is not an integer or out of range"));
  Run({"SET", "s", "abc"});
  EXPECT_THAT(Run({"INCR", "s"}), ElementsAre("-ERR value is not an integer or out of range"));
  for (const char* stored : {"-0", "-01", "007", "+1", "-", " 1", "1 "}) {
    Run({"SET", "z", stored});
    EXPECT_THAT(Run({"INCR", "z"}), ElementsAre("-ERR value is not an integer or out of range")) << stored;
  }
  Run({"SET", "z", "-1"});
  EXPECT_THAT(Run({"INCR", "z"}), ElementsAre(":0"));
  Run({"SET", "max", "9223372036854775807"});
  EXPECT_THAT(Run({"INCR", "max"}), ElementsAre("-ERR increment or decrement would overflow"));
  EXPECT_THAT(Run({"DECRBY", "n", "-9223372036854775808"}),
              ElementsAre("-ERR decrement would overflow"));
  EXPECT_THAT(Run({"INCR"}), ElementsAre("-ERR wrong number of arguments for 'incr' command"));
}

TEST_F(RespSessionTest, DbSizeAndInfo) {
  Run({"MSET", "a", "1", "bb", "22"});
  EXPECT_THAT(Run({"DBSIZE"}), ElementsAre(":2"));
  Replies info = Run({"INFO"});
  ASSERT_EQ(info.size(), 1u);
  EXPECT_THAT(info[0], StartsWith("# Server\r\nredis_version:7.0.0\r\n"));
  EXPECT_THAT(info[0], HasSubstr("\r\n\r\n# Clients\r\n"));
  EXPECT_THAT(info[0], HasSubstr("# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\n"));
  EXPECT_THAT(info[0], HasSubstr("# Farm\r\nkeys:2\r\npair_bytes:6\r\nmemory_bytes:134\r\n"
                                 "slots:16\r\noverflow_blocks:0\r\n"));
  EXPECT_THAT(Run({"INFO", "keyspace"}),
              ElementsAre("# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\n"));
  EXPECT_THAT(Run({"INFO", "farm", "SERVER"})[0], StartsWith("# Server\r\n"));
  EXPECT_THAT(Run({"INFO", "nosuch"}), ElementsAre(""));
  EXPECT_THAT(Run({"DBSIZE", "x"}),
              ElementsAre("-ERR wrong number of arguments for 'dbsize' command"));
}

TEST_F(RespSessionTest, UnknownCommandInRedisFormat) {
  EXPECT_THAT(Run({"foo", "a", "b"}),
              ElementsAre("-ERR unknown command 'foo', with args beginning with: 'a' 'b' "));
  EXPECT_THAT(Send("FOO\r\n"),
              ElementsAre("-ERR unknown command 'FOO', with args beginning with: "));
  // Redis cuts the argument list near 128 bytes (checked against redis-server 7.0).
  EXPECT_THAT(Run({"foo", std::string(100, 'a'), std::string(100, 'b'), "c"}),
              ElementsAre(absl::StrCat("-ERR unknown command 'foo', with args beginning with: '",
                                       std::string(100, 'a'), "' '", std::string(25, 'b'), "' ")));
  EXPECT_THAT(Run({std::string(200, 'F')}),
              ElementsAre(absl::StrCat("-ERR unknown command '", std::string(128, 'F'),
                                       "', with args beginning with: ")));
  // CR and LF cannot reach the client inside an error line.
  EXPECT_THAT(Run({"foo", "a\r\nb"}),
              ElementsAre("-ERR unknown command 'foo', with args beginning with: 'a  b' "));
  EXPECT_THAT(Run({"PING"}), ElementsAre("+PONG"));  // the connection goes on
  EXPECT_FALSE(session_->close_requested());
}

TEST_F(RespSessionTest, SelectClientConfigCommand) {
  EXPECT_THAT(Run({"SELECT", "0"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"SELECT", "1"}), ElementsAre("-ERR DB index is out of range"));
  EXPECT_THAT(Run({"SELECT", "x"}), ElementsAre("-ERR value is not an integer or out of range"));
  EXPECT_THAT(Run({"CLIENT", "GETNAME"}), ElementsAre("(nil)"));
  EXPECT_THAT(Run({"CLIENT", "SETNAME", "worker-1"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"client", "getname"}), ElementsAre("worker-1"));
  EXPECT_THAT(Run({"CLIENT", "SETNAME", "a b"}),
              ElementsAre("-ERR Client names cannot contain spaces, newlines or special "
                          "characters."));
  EXPECT_THAT(Run({"CLIENT", "SETNAME"}),
              ElementsAre("-ERR wrong number of arguments for 'client|setname' command"));
  EXPECT_THAT(Run({"CLIENT", "Foo"}),
              ElementsAre("-ERR unknown subcommand 'Foo'. Try CLIENT HELP."));
  EXPECT_THAT(Run({"CONFIG", "GET", "save"}), ElementsAre("[save, ]"));
  EXPECT_THAT(Run({"CONFIG", "GET", "appendonly"}), ElementsAre("[appendonly, no]"));
  EXPECT_THAT(Run({"CONFIG", "GET", "save", "APPENDONLY"}),
              ElementsAre("[save, , appendonly, no]"));
  EXPECT_THAT(Run({"CONFIG", "GET", "max*"}), ElementsAre("[maxclients, 0]"));
  EXPECT_THAT(Run({"CONFIG", "GET", "nosuch"}), ElementsAre("[]"));
  EXPECT_THAT(Run({"CONFIG", "GET"}),
              ElementsAre("-ERR wrong number of arguments for 'config|get' command"));
  EXPECT_THAT(Run({"CONFIG", "SET", "save", ""}), ElementsAre("-ERR CONFIG SET is not supported"));
  EXPECT_THAT(Run({"CONFIG", "foo"}),
              ElementsAre("-ERR unknown subcommand 'foo'. Try CONFIG HELP."));
  EXPECT_THAT(Run({"COMMAND", "DOCS"}), ElementsAre("[]"));
}

// COMMAND as Redis 7 answers it, for the kv commands: where each command's keys are.
TEST_F(RespSessionTest, CommandDescribesEveryCommand) {
  const std::string count = std::to_string(AllCommands().size());
  EXPECT_THAT(Run({"COMMAND", "COUNT"}), ElementsAre(":" + count));
  EXPECT_THAT(Run({"command", "count", "x"}),
              ElementsAre("-ERR wrong number of arguments for 'command|count' command"));
  EXPECT_THAT(Run({"COMMAND", "INFO", "get", "MSET", "nosuch", "auth"}),
              ElementsAre("[[get, :2, [+readonly], :1, :1, :1, [], [], [], []], "
                          "[mset, :-3, [+write], :1, :-1, :2, [], [], [], []], (nil array), "
                          "[auth, :-2, [+no-auth], :0, :0, :0, [], [], [], []]]"));
  const std::vector<std::string> list = Run({"COMMAND", "LIST"});
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(list[0], "[get, set, ping,")) << list[0];
  EXPECT_THAT(Run({"COMMAND", "LIST", "FILTERBY", "MODULE", "x"}), ElementsAre("-ERR syntax error"));
  // Every command, as COMMAND INFO gives each.
  const std::vector<std::string> all = Run({"COMMAND"});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all, Run({"COMMAND", "INFO"}));
  EXPECT_TRUE(absl::StartsWith(all[0], "[[get, :2, [+readonly], :1, :1, :1,")) << all[0];
  EXPECT_TRUE(absl::StrContains(all[0], "[watch, :-2, [], :1, :-1, :1,")) << all[0];
  EXPECT_THAT(Run({"COMMAND", "FOO"}), ElementsAre("-ERR unknown subcommand 'FOO'. Try COMMAND HELP."));
}

TEST_F(RespSessionTest, InlineCommands) {
  EXPECT_THAT(Send("SET k hello\r\nGET k\nEXISTS k\r\n"), ElementsAre("+OK", "hello", ":1"));
  EXPECT_THAT(Send("SET \"k 2\" 'a b'\r\nGET \"k\\x202\"\r\n"), ElementsAre("+OK", "a b"));
  EXPECT_THAT(Send("GET \"k\r\n"), ElementsAre("-ERR Protocol error: unbalanced quotes in request"));
  EXPECT_TRUE(session_->close_requested());
}

TEST_F(RespSessionTest, QuitRepliesThenCloses) {
  EXPECT_THAT(Send("PING\r\nQUIT\r\nPING\r\n"), ElementsAre("+PONG", "+OK"));
  EXPECT_TRUE(session_->close_requested());
  EXPECT_FALSE(session_->wants_input());
  session_->Feed("PING\r\n");  // ignored
  EXPECT_TRUE(session_->output().empty());
}

TEST_F(RespSessionTest, ProtocolErrorRepliesThenCloses) {
  EXPECT_THAT(Send("PING\r\n*x\r\nPING\r\n"),
              ElementsAre("+PONG", "-ERR Protocol error: invalid multibulk length"));
  EXPECT_TRUE(session_->close_requested());
  EXPECT_FALSE(session_->wants_input());
}

TEST_F(RespSessionTest, ProtocolErrorWaitsForEarlierReplies) {
  // The GET is in flight when the error is parsed: its reply still comes first.
  session_->Feed("SET k v\r\nGET k\r\n*1\r\n$x\r\n");
  EXPECT_FALSE(session_->close_requested());
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(session_->output(), "+OK\r\n$1\r\nv\r\n-ERR Protocol error: invalid bulk length\r\n");
  EXPECT_TRUE(session_->close_requested());
}

TEST_F(RespSessionTest, EndOfInputAnswersCompleteRequestsThenCloses) {
  session_->Feed("SET k v\r\nGET k\r\n*2\r\n$3\r\nGET");
  session_->EndOfInput();
  EXPECT_FALSE(session_->close_requested());  // replies pending
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(session_->output(), "+OK\r\n$1\r\nv\r\n");
  EXPECT_TRUE(session_->close_requested());
}

TEST_F(RespSessionTest, ValuesOverTheStoreLimitsAreRefused) {
  SessionEnv small({}, {.max_key_bytes = 8, .max_value_bytes = 16});
  auto s = small.NewSession();
  EXPECT_THAT(small.Command(*s, {"SET", "k", std::string(17, 'v')}),
              ElementsAre("-ERR value is too large (17 bytes; this store's limit is 16)"));
  EXPECT_THAT(small.Command(*s, {"SET", "123456789", "v"}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
  EXPECT_THAT(small.Command(*s, {"MSET", "a", "1", "b", std::string(17, 'v')}),
              ElementsAre("-ERR value is too large (17 bytes; this store's limit is 16)"));
  EXPECT_THAT(small.Command(*s, {"SET", "k", std::string(16, 'v')}), ElementsAre("+OK"));
  EXPECT_EQ(small.cluster().Stats().keys, 1u);  // nothing of the refused ones stored
  EXPECT_FALSE(small.cluster().Peek("a").has_value());
  EXPECT_THAT(small.Command(*s, {"GET", "k"}), ElementsAre(std::string(16, 'v')));
}

TEST_F(RespSessionTest, StringEditsKeepTheValueLimitAndTheEscape) {
  SessionEnv small({}, {.max_key_bytes = 8, .max_value_bytes = 16});
  auto s = small.NewSession();
  EXPECT_THAT(small.Command(*s, {"APPEND", "k", std::string(10, 'a')}), ElementsAre(":10"));
  EXPECT_THAT(small.Command(*s, {"APPEND", "k", std::string(7, 'b')}),
              ElementsAre("-ERR value is too large (17 bytes as stored; this store's limit is 16)"));
  EXPECT_THAT(small.Command(*s, {"GET", "k"}), ElementsAre(std::string(10, 'a'))) << "unchanged";
  EXPECT_THAT(small.Command(*s, {"SETNX", "n", std::string(17, 'v')}),
              ElementsAre("-ERR value is too large (17 bytes; this store's limit is 16)"));
  EXPECT_FALSE(small.cluster().Peek("n").has_value());
  // A string that begins with 0xFF is stored escaped, and reads back as it was.
  EXPECT_THAT(small.Command(*s, {"APPEND", "e", "\xFF"}), ElementsAre(":1"));
  EXPECT_THAT(small.Command(*s, {"APPEND", "e", "x"}), ElementsAre(":2"));
  EXPECT_EQ(small.cluster().Peek("e"), "\xFF\xFFx");
  EXPECT_THAT(small.Command(*s, {"STRLEN", "e"}), ElementsAre(":2"));
  EXPECT_THAT(small.Command(*s, {"GETSET", "e", "plain"}), ElementsAre("\xFFx"));
  EXPECT_THAT(small.Command(*s, {"GETDEL", "e"}), ElementsAre("plain"));
  EXPECT_FALSE(small.cluster().Peek("e").has_value());
  // MSETNX sets all or nothing.
  EXPECT_THAT(small.Command(*s, {"MSETNX", "x", "1", "k", "2"}), ElementsAre(":0"));
  EXPECT_FALSE(small.cluster().Peek("x").has_value());
  EXPECT_THAT(small.Command(*s, {"MSETNX", "x", "1", "y", "2"}), ElementsAre(":1"));
  EXPECT_THAT(small.Command(*s, {"MGET", "x", "y"}), ElementsAre("[1, 2]"));
}

// SETRANGE past the value limit is refused before the padded string is made (an offset
// of hundreds of MiB costs nothing) and changes nothing; a range that starts with 0xFF is
// stored escaped; INCRBYFLOAT's result must fit too. Oversize keys: SETRANGE with an
// empty value and GETRANGE read them as missing, the writes refuse them.
TEST_F(RespSessionTest, RangeAndFloatEditsKeepTheLimits) {
  SessionEnv small({}, {.max_key_bytes = 8, .max_value_bytes = 16});
  auto s = small.NewSession();
  EXPECT_THAT(small.Command(*s, {"SET", "k", "abc"}), ElementsAre("+OK"));
  EXPECT_THAT(small.Command(*s, {"SETRANGE", "k", "16", "x"}),
              ElementsAre("-ERR value is too large (17 bytes as stored; this store's limit is 16)"));
  EXPECT_THAT(small.Command(*s, {"SETRANGE", "k", "500000000", "x"}),
              ElementsAre("-ERR value is too large (500000001 bytes as stored; this store's limit is 16)"));
  EXPECT_EQ(small.cluster().Peek("k"), "abc") << "unchanged";
  EXPECT_THAT(small.Command(*s, {"SETRANGE", "k", "15", "x"}), ElementsAre(":16"));
  EXPECT_EQ(small.cluster().Peek("k"), std::string("abc") + std::string(12, '\0') + "x");
  EXPECT_THAT(small.Command(*s, {"SETRANGE", "k", "0", "\xFF"}),
              ElementsAre("-ERR value is too large (17 bytes as stored; this store's limit is 16)"))
      << "16 bytes beginning with 0xFF are 17 as stored";
  EXPECT_THAT(small.Command(*s, {"SETRANGE", "e", "0", "\xFFz"}), ElementsAre(":2"));
  EXPECT_EQ(small.cluster().Peek("e"), "\xFF\xFFz");
  EXPECT_THAT(small.Command(*s, {"GETRANGE", "e", "0", "0"}), ElementsAre("\xFF"));
  EXPECT_THAT(small.Command(*s, {"INCRBYFLOAT", "f", "0.1"}), ElementsAre("0.1"));
  EXPECT_THAT(small.Command(*s, {"INCRBYFLOAT", "f", "1e10"}),
              ElementsAre("-ERR value is too large (29 bytes as stored; this store's limit is 16)"));
  EXPECT_EQ(small.cluster().Peek("f"), "0.1") << "unchanged";
  const std::string big = "123456789";
  EXPECT_THAT(small.Command(*s, {"GETRANGE", big, "0", "-1"}), ElementsAre(""));
  EXPECT_THAT(small.Command(*s, {"SETRANGE", big, "0", ""}), ElementsAre(":0"));
  EXPECT_THAT(small.Command(*s, {"SETRANGE", big, "0", "x"}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
  EXPECT_THAT(small.Command(*s, {"INCRBYFLOAT", big, "1"}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
  EXPECT_THAT(small.Command(*s, {"HINCRBYFLOAT", big, "f", "1"}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
}

TEST_F(RespSessionTest, KeysOverTheStoreLimitAreMissingToReads) {
  SessionEnv small({}, {.max_key_bytes = 8, .max_value_bytes = 16});
  auto s = small.NewSession();
  const std::string big = "123456789";
  EXPECT_THAT(small.Command(*s, {"SET", "k", "v"}), ElementsAre("+OK"));
  EXPECT_THAT(small.Command(*s, {"INCR", big}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
  EXPECT_THAT(small.Command(*s, {"MSET", "a", "1", big, "2"}),
              ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"));
  EXPECT_FALSE(small.cluster().Peek("a").has_value());
  EXPECT_THAT(small.Command(*s, {"GET", big}), ElementsAre("(nil)"));
  EXPECT_THAT(small.Command(*s, {"TYPE", big}), ElementsAre("+none"));
  EXPECT_THAT(small.Command(*s, {"MGET", big, "k", big + "0", "x"}),
              ElementsAre("[(nil), v, (nil), (nil)]"));
  EXPECT_THAT(small.Command(*s, {"MGET", big, big}), ElementsAre("[(nil), (nil)]"));
  EXPECT_THAT(small.Command(*s, {"EXISTS", big, "k", "k"}), ElementsAre(":2"));
  EXPECT_THAT(small.Command(*s, {"DEL", big}), ElementsAre(":0"));
  EXPECT_THAT(small.Command(*s, {"STRLEN", big}), ElementsAre(":0"));
  EXPECT_THAT(small.Command(*s, {"GETDEL", big}), ElementsAre("(nil)"));
  for (const std::vector<std::string>& creates :
       {std::vector<std::string>{"SETNX", big, "v"}, {"GETSET", big, "v"}, {"APPEND", big, "v"},
        {"MSETNX", "a", "1", big, "v"}}) {
    EXPECT_THAT(small.Command(*s, creates),
                ElementsAre("-ERR key is too large (9 bytes; this store's limit is 8)"))
        << creates[0];
  }
  EXPECT_THAT(small.Command(*s, {"DEL", big, "k"}), ElementsAre(":1"));
  EXPECT_EQ(small.cluster().Stats().keys, 0u);
  // The same in a pipeline (lookups batched) and inside EXEC.
  EXPECT_THAT(small.Exchange(*s, absl::StrCat(Multibulk({"SET", "k", "w"}), Multibulk({"GET", big}),
                                              Multibulk({"GET", "k"}),
                                              Multibulk({"MGET", "k", big}))),
              ElementsAre("+OK", "(nil)", "w", "[w, (nil)]"));
  EXPECT_THAT(small.Exchange(*s, absl::StrCat(Multibulk({"WATCH", big}), Multibulk({"MULTI"}),
                                              Multibulk({"GET", big}), Multibulk({"DEL", big, "k"}),
                                              Multibulk({"EXEC"}))),
              ElementsAre("+OK", "+OK", "+QUEUED", "+QUEUED", "[(nil), :1]"));
}

TEST_F(RespSessionTest, StoreErrorsAreReportedAndTheConnectionGoesOn) {
  env_.cluster().InjectError(absl::UnavailableError("node 3 did not answer"));
  EXPECT_THAT(Run({"GET", "k"}), ElementsAre("-ERR a node did not answer"));
  env_.cluster().InjectError(absl::ResourceExhaustedError("the store is full"));
  EXPECT_THAT(Run({"SET", "k", "v"}), ElementsAre("-ERR the store is full"));
  env_.cluster().InjectError(absl::DeadlineExceededError(""));
  EXPECT_THAT(Run({"DBSIZE"}), ElementsAre("-ERR DEADLINE_EXCEEDED"));
  EXPECT_THAT(Run({"PING"}), ElementsAre("+PONG"));
  EXPECT_FALSE(session_->close_requested());
}

TEST_F(RespSessionTest, CountersCountCommandsAndErrors) {
  RespCounters counters;
  RespSessionOptions options;
  options.counters = &counters;
  auto s = env_.NewSession(options);
  env_.Exchange(*s, "PING\r\nGET k\r\nFOO\r\nGET\r\n");
  EXPECT_EQ(counters.commands.load(), 4u);
  EXPECT_EQ(counters.error_replies.load(), 2u);
  env_.Exchange(*s, "*x\r\n");
  EXPECT_EQ(counters.protocol_errors.load(), 1u);
}

// --- AUTH ---

class RespSessionAuthTest : public RespSessionTest {
 protected:
  RespSessionOptions Options() override {
    RespSessionOptions options;
    options.password = "secret";
    return options;
  }
};

TEST_F(RespSessionAuthTest, CommandsNeedAuth) {
  EXPECT_THAT(Run({"PING"}), ElementsAre("-NOAUTH Authentication required."));
  EXPECT_THAT(Run({"GET", "k"}), ElementsAre("-NOAUTH Authentication required."));
  // As in Redis: an unknown command and a wrong arity are reported first.
  EXPECT_THAT(Run({"FOO", "bar"}),
              ElementsAre("-ERR unknown command 'FOO', with args beginning with: 'bar' "));
  EXPECT_THAT(Run({"GET"}), ElementsAre("-ERR wrong number of arguments for 'get' command"));
  EXPECT_THAT(Run({"AUTH", "wrong"}),
              ElementsAre("-WRONGPASS invalid username-password pair or user is disabled."));
  EXPECT_THAT(Run({"AUTH", "bob", "secret"}),
              ElementsAre("-WRONGPASS invalid username-password pair or user is disabled."));
  EXPECT_THAT(Run({"AUTH", "a", "b", "c"}), ElementsAre("-ERR syntax error"));
  EXPECT_THAT(Run({"AUTH", "secret"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"PING"}), ElementsAre("+PONG"));
  EXPECT_THAT(Run({"AUTH", "default", "secret"}), ElementsAre("+OK"));
  EXPECT_THAT(Run({"AUTH", "wrong"}),  // a failed AUTH does not log out
              ElementsAre("-WRONGPASS invalid username-password pair or user is disabled."));
  EXPECT_THAT(Run({"SET", "k", "v"}), ElementsAre("+OK"));
}

TEST_F(RespSessionAuthTest, QuitWorksBeforeAuth) {
  EXPECT_THAT(Run({"QUIT"}), ElementsAre("+OK"));
  EXPECT_TRUE(session_->close_requested());
}

TEST_F(RespSessionAuthTest, UnauthenticatedRequestsAreSmall) {
  auto s = env_.NewSession(Options());
  EXPECT_THAT(env_.Exchange(*s, "*11\r\n"),
              ElementsAre("-ERR Protocol error: unauthenticated multibulk length"));
  EXPECT_TRUE(s->close_requested());
  // Once authenticated, the normal limits apply.
  auto t = env_.NewSession(Options());
  std::vector<std::string> mset = {"MSET"};
  for (int i = 0; i < 10; ++i) {
    mset.push_back(absl::StrCat("k", i));
    mset.push_back(std::string(20000, 'v'));
  }
  EXPECT_THAT(env_.Exchange(*t, absl::StrCat(Multibulk({"AUTH", "secret"}), Multibulk(mset))),
              ElementsAre("+OK", "+OK"));
}

TEST_F(RespSessionTest, AuthWithoutPassword) {
  EXPECT_THAT(Run({"AUTH", "x"}),
              ElementsAre("-ERR AUTH <password> called without any password configured for the "
                          "default user. Are you sure your configuration is correct?"));
  EXPECT_THAT(Run({"AUTH", "default", "x"}), ElementsAre("+OK"));
}

// --- Pipelining and order ---

// Operations on keys starting with "slow" take 20 ms; "put" takes 10 ms; the rest are
// immediate (the loop's next iteration).
FakeStoreOptions SlowKeys() {
  FakeStoreOptions options;
  options.delay = [](absl::string_view op, absl::string_view key) {
    if (absl::StartsWith(key, "slow")) return absl::Milliseconds(20);
    if (op == "put") return absl::Milliseconds(10);
    return absl::ZeroDuration();
  };
  return options;
}

class RespSessionPipelineTest : public RespSessionTest {
 protected:
  RespSessionPipelineTest() : RespSessionTest(SlowKeys()) {}
};

TEST_F(RespSessionPipelineTest, RepliesKeepRequestOrderWhenCompletionsDoNot) {
  env_.cluster().Poke("slow1", "s1");
  env_.cluster().Poke("slow2", "s2");
  env_.cluster().Poke("fast", "f");
  session_->Feed("GET slow1\r\nGET fast\r\nPING\r\nGET slow2\r\nECHO e\r\nMGET fast slow1\r\n");
  // All overlap: nothing they touch is written.
  EXPECT_EQ(session_->in_flight(), 4u);
  EXPECT_TRUE(session_->output().empty());  // PING's reply waits behind GET slow1
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(session_->output(),
            "$2\r\ns1\r\n$1\r\nf\r\n+PONG\r\n$2\r\ns2\r\n$1\r\ne\r\n*2\r\n$1\r\nf\r\n$2\r\ns1\r\n");
}

TEST_F(RespSessionPipelineTest, AConnectionSeesItsOwnWrites) {
  // Each GET and INCR waits for the write before it on the same key (puts are slow,
  // reads fast: issued together, the reads would see old values).
  session_->Feed("SET k 1\r\nGET k\r\nSET k 2\r\nGET k\r\nINCR k\r\nGET k\r\nDEL k\r\nGET k\r\n");
  EXPECT_EQ(session_->in_flight(), 1u);
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(testing::DecodeReplies(session_->output()).replies,
            (Replies{"+OK", "1", "+OK", "2", ":3", "3", ":1", "(nil)"}));
}

TEST_F(RespSessionPipelineTest, CommandsOnOtherKeysOverlap) {
  session_->Feed("SET a 1\r\nSET b 2\r\nGET c\r\nMSET d 1 e 2\r\nGET a\r\n");
  EXPECT_EQ(session_->in_flight(), 4u);  // GET a waits for SET a
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(testing::DecodeReplies(session_->output()).replies,
            (Replies{"+OK", "+OK", "(nil)", "+OK", "1"}));
}

TEST_F(RespSessionPipelineTest, LookupsStartedTogetherAreOneMultiGet) {
  env_.cluster().Poke("a", "1");
  env_.cluster().Poke("b", "2");
  session_->Feed("GET a\r\nGET b\r\nMGET a missing\r\nEXISTS a b a\r\nGET a\r\nHGET h f\r\nTYPE b\r\n");
  EXPECT_EQ(session_->in_flight(), 7u);
  EXPECT_EQ(session_->read_batch_stats().batches, 1u);
  EXPECT_EQ(session_->read_batch_stats().batched, 7u);
  EXPECT_EQ(session_->read_batch_stats().keys, 4u);  // a, b, missing, h: each read once
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(testing::DecodeReplies(session_->output()).replies,
            (Replies{"1", "2", "[1, (nil)]", ":3", "1", "(nil)", "+string"}));
}

TEST_F(RespSessionPipelineTest, WritesOfOneKeyGoTogetherAndInOrder) {
  // Puts take 10 ms: "SET k 1" is at the store while the rest arrive; they do not wait
  // for it, and go as one step after it (WRONGTYPE included), in request order.
  session_->Feed("SET k 1\r\nSET k 2\r\nHSET k f v\r\nSET k 3 GET\r\nSET k 4\r\nGET k\r\n");
  EXPECT_EQ(session_->in_flight(), 5u);  // GET k waits for the writes of k
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(testing::DecodeReplies(session_->output()).replies,
            (Replies{"+OK", "+OK",
                     "-WRONGTYPE Operation against a key holding the wrong kind of value", "2", "+OK",
                     "4"}));
  EXPECT_EQ(session_->write_combiner().stats().steps, 2u);
  EXPECT_EQ(session_->write_combiner().stats().combined, 4u);
}

TEST_F(RespSessionPipelineTest, SessionsOfAThreadCombineTheirWritesOfAKey) {
  RespSessionOptions options;
  options.write_combiner = WriteCombiner::Create(&env_.store(), options.max_txn_attempts);
  auto a = env_.NewSession(options);
  auto b = env_.NewSession(options);
  a->Feed("SET k a1\r\n");  // at the store for 10 ms
  b->Feed("SET k b1\r\n");
  a->Feed("SET k a2\r\n");
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(a->output(), "+OK\r\n+OK\r\n");
  EXPECT_EQ(b->output(), "+OK\r\n");
  EXPECT_EQ(env_.cluster().Peek("k"), "a2");  // b1 then a2, in the order submitted
  EXPECT_EQ(options.write_combiner->stats().steps, 2u);
}

// A command's keys are compared with those of the commands in flight in linear time: a
// pipelined DEL and MGET of 100k keys each took minutes of the worker thread when every
// pair was compared (10^10 comparisons; the bound below is a thousandth of that). The
// answers stay those of one command after the other.
TEST_F(RespSessionPipelineTest, ManyKeyedCommandsAreComparedInLinearTime) {
  constexpr int kKeys = 100000;
  std::vector<std::string> del = {"DEL"}, mget = {"MGET"};
  for (int i = 0; i < kKeys; ++i) {
    del.push_back(absl::StrCat("d:", i));  // in flight at least until the loop runs
    mget.push_back(absl::StrCat("other:", i));
  }
  env_.cluster().Poke("d:7", "x");
  env_.cluster().Poke("other:9", "y");
  const absl::Time start = absl::Now();
  session_->Feed(testing::Multibulk(del) + testing::Multibulk(mget) +
                 testing::Multibulk({"GET", absl::StrCat("d:", kKeys - 1)}));
  const absl::Duration feeding = absl::Now() - start;
  EXPECT_LT(feeding, absl::Seconds(10)) << "comparing the commands' keys took " << feeding;
  EXPECT_EQ(session_->in_flight(), 2u) << "the MGET's keys are all other keys; the GET's is the DEL's";
  ASSERT_TRUE(env_.Drain(absl::Seconds(60)));
  const Replies replies = testing::DecodeReplies(session_->output()).replies;
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0], ":1");
  EXPECT_EQ(replies[2], "(nil)");
  EXPECT_NE(replies[1].find("y"), std::string::npos);
}

TEST_F(RespSessionPipelineTest, ExclusiveCommandsWaitForEverythingBefore) {
  session_->Feed("SET a 1\r\nSET slowb 2\r\nDBSIZE\r\nGET a\r\n");
  EXPECT_EQ(session_->in_flight(), 2u);
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(testing::DecodeReplies(session_->output()).replies, (Replies{"+OK", "+OK", ":2", "1"}));
}

TEST_F(RespSessionPipelineTest, InFlightIsBounded) {
  RespSessionOptions options;
  options.max_in_flight = 4;
  auto s = env_.NewSession(options);
  std::string pipeline;
  Replies expected;
  for (int i = 0; i < 100; ++i) {
    env_.cluster().Poke(absl::StrCat("slow", i), absl::StrCat("v", i));
    absl::StrAppend(&pipeline, "GET slow", i, "\r\n");
    expected.push_back(absl::StrCat("v", i));
  }
  s->Feed(pipeline);
  EXPECT_EQ(s->in_flight(), 4u);
  EXPECT_FALSE(s->wants_input());
  ASSERT_TRUE(env_.Drain(absl::Seconds(10)));
  EXPECT_EQ(testing::DecodeReplies(s->output()).replies, expected);
  EXPECT_TRUE(s->wants_input());
}

TEST_F(RespSessionTest, UnreadOutputStopsParsing) {
  RespSessionOptions options;
  options.max_output_bytes = 100;
  auto s = env_.NewSession(options);
  const std::string big(1000, 'x');
  std::string pipeline;
  for (int i = 0; i < 10; ++i) pipeline += Multibulk({"ECHO", big});
  s->Feed(pipeline);
  // One reply is out; the rest waits unparsed until the client reads.
  EXPECT_EQ(s->output().size(), 1000u + 9);
  EXPECT_FALSE(s->wants_input());
  EXPECT_GT(s->buffered_input_bytes(), 8000u);
  int replies = 0;
  while (!s->output().empty()) {
    EXPECT_LE(s->output().size(), 1009u);
    s->ConsumeOutput(s->output().size());
    ++replies;
  }
  EXPECT_EQ(replies, 10);
  EXPECT_TRUE(s->wants_input());
  EXPECT_EQ(s->buffered_input_bytes(), 0u);
}

TEST_F(RespSessionPipelineTest, SessionDestroyedWithCommandsInFlight) {
  auto s = env_.NewSession();
  s->Feed("SET slowk v\r\nGET slowj\r\nMSET a 1 b 2\r\n");
  EXPECT_EQ(s->in_flight(), 3u);
  s.reset();  // the store still reads the arguments later (the fake keeps views)
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(env_.cluster().Peek("slowk"), "v");  // a started write completes
}

}  // namespace
}  // namespace farm::kv::resp
