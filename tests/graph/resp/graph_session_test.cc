// GraphSession over a MemoryGraphStore: every command's contract, binary-safe data,
// pipelining and the connection's life (QUIT, protocol errors, end of input, output
// back-pressure). Argument and store errors: graph_session_errors_test.cc.
#include "graph/resp/graph_session.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/resp/graph_session_env.h"

namespace farm::graph {
namespace {

using ::farm::graph::testing::GraphSessionEnv;
using ::farm::graph::testing::Multibulk;
using ::testing::ElementsAre;

class GraphSessionTest : public ::testing::Test {
 protected:
  std::string C(std::vector<std::string> words) { return env_.Command(*session_, std::move(words)); }
  // LINK.ADD 1 123 id2 visibility 1 time data
  std::string AddLink(int64_t id2, int visibility, int64_t time, std::string data = "d") {
    return C({"LINK.ADD", "1", "123", absl::StrCat(id2), absl::StrCat(visibility), "1",
              absl::StrCat(time), std::move(data)});
  }

  GraphSessionEnv env_;
  std::shared_ptr<GraphSession> session_ = env_.NewSession();
};

TEST_F(GraphSessionTest, NodeAddGetUpdateDelete) {
  EXPECT_EQ(C({"NODE.ADD", "2048", "1", "100", "hello"}), ":1");
  EXPECT_EQ(C({"node.add", "2048", "5", "101", "world"}), ":2");
  EXPECT_EQ(C({"NODE.GET", "1", "2048"}), "[:1, :2048, :1, :100, hello]");
  EXPECT_EQ(C({"NODE.GET", "2", "2048"}), "[:2, :2048, :5, :101, world]");
  EXPECT_EQ(C({"NODE.GET", "1", "7"}), "(nil)");  // another type
  EXPECT_EQ(C({"NODE.GET", "99", "2048"}), "(nil)");

  EXPECT_EQ(C({"NODE.UPDATE", "1", "2048", "2", "200", "bye"}), ":1");
  EXPECT_EQ(C({"NODE.UPDATE", "1", "7", "3", "300", "no"}), ":0");
  EXPECT_EQ(C({"NODE.UPDATE", "99", "2048", "3", "300", "no"}), ":0");
  EXPECT_EQ(C({"NODE.GET", "1", "2048"}), "[:1, :2048, :2, :200, bye]");

  EXPECT_EQ(C({"NODE.DELETE", "1", "7"}), ":0");
  EXPECT_EQ(C({"NODE.DELETE", "1", "2048"}), ":1");
  EXPECT_EQ(C({"NODE.DELETE", "1", "2048"}), ":0");
  EXPECT_EQ(C({"NODE.GET", "1", "2048"}), "(nil)");
  EXPECT_EQ(C({"NODE.GET", "2", "2048"}), "[:2, :2048, :5, :101, world]");
}

TEST_F(GraphSessionTest, NodeFieldsAtTheirTypesLimits) {
  EXPECT_EQ(C({"NODE.ADD", "-2147483648", "9223372036854775807", "2147483647", ""}), ":1");
  EXPECT_EQ(C({"NODE.GET", "1", "-2147483648"}),
            "[:1, :-2147483648, :9223372036854775807, :2147483647, ]");
}

TEST_F(GraphSessionTest, NodeResetSetsTheNextId) {
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "a"}), ":1");
  EXPECT_EQ(C({"NODE.RESET", "1000"}), "+OK");
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "b"}), ":1000");
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "c"}), ":1001");
  EXPECT_EQ(C({"NODE.GET", "1000", "1"}), "[:1000, :1, :1, :1, b]");
}

TEST_F(GraphSessionTest, NodeLoadAddsSeveralNodesWithConsecutiveIds) {
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "a"}), ":1");
  EXPECT_EQ(C({"NODE.LOAD", "7", "1", "10", "b", "8", "2", "20", "c", "9", "3", "30", ""}), ":2");
  EXPECT_EQ(C({"NODE.GET", "2", "7"}), "[:2, :7, :1, :10, b]");
  EXPECT_EQ(C({"NODE.GET", "3", "8"}), "[:3, :8, :2, :20, c]");
  EXPECT_EQ(C({"NODE.GET", "4", "9"}), "[:4, :9, :3, :30, ]");
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "d"}), ":5");
  // Four words per node; a refused argument stores none of them and takes no id.
  EXPECT_EQ(C({"NODE.LOAD", "7", "1", "10"}), "-ERR wrong number of arguments for 'node.load' command");
  EXPECT_EQ(C({"NODE.LOAD", "7", "1", "10", "b", "8"}), "-ERR wrong number of arguments for 'node.load' command");
  EXPECT_EQ(C({"NODE.LOAD", "7", "1", "10", "b", "x", "2", "20", "c"}), "-ERR value is not an integer or out of range");
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "e"}), ":6");
}

TEST_F(GraphSessionTest, LinkCountsFollowAddHideDeleteAndReAdd) {
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":0");
  EXPECT_EQ(AddLink(2, 1, 1000), ":1");  // new, visible
  EXPECT_EQ(AddLink(2, 1, 1001), ":0");  // exists: replaced
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":1");
  EXPECT_EQ(AddLink(3, 0, 1002), ":1");  // new, hidden: not counted
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":1");
  EXPECT_EQ(AddLink(3, 1, 1003), ":0");  // made visible
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":2");

  EXPECT_EQ(C({"LINK.DELETE", "1", "123", "2"}), ":1");  // hidden
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":1");
  EXPECT_EQ(C({"LINK.DELETE", "1", "123", "2"}), ":1");  // found (already hidden)
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":1");
  EXPECT_EQ(C({"LINK.DELETE", "1", "123", "99"}), ":0");
  EXPECT_EQ(C({"LINK.DELETE", "1", "7", "3"}), ":0");  // another type

  EXPECT_EQ(AddLink(2, 1, 1004), ":0");  // re-added: it still existed, hidden
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":2");
  EXPECT_EQ(C({"LINK.DELETE", "1", "123", "2", "expunge"}), ":1");
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":1");
  EXPECT_EQ(C({"LINK.GET", "1", "123", "2"}), "[]");
  EXPECT_EQ(C({"LINK.DELETE", "1", "123", "2", "EXPUNGE"}), ":0");
  EXPECT_EQ(AddLink(2, 1, 1005), ":1");  // new again after EXPUNGE
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":2");
  EXPECT_EQ(C({"LINK.COUNT", "2", "123"}), ":0");
}

TEST_F(GraphSessionTest, LinkLoadAddsSeveralLinksAsUpserts) {
  EXPECT_EQ(C({"LINK.LOAD", "1", "123", "5", "1", "0", "500", "a", "4", "0", "0", "400", "b"}), ":2");
  EXPECT_EQ(C({"LINK.LOAD", "1", "123", "4", "1", "0", "300", "c", "3", "1", "0", "200", "d"}), ":1");
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":3");
  EXPECT_EQ(C({"LINK.RANGE", "1", "123", "0", "1000", "0", "10"}),
            "[[:1, :123, :5, :1, :0, :500, a], [:1, :123, :4, :1, :0, :300, c], [:1, :123, :3, :1, :0, :200, d]]");
  // id1 type, then five words per link.
  EXPECT_EQ(C({"LINK.LOAD", "1", "123", "5", "1", "0", "500"}), "-ERR wrong number of arguments for 'link.load' command");
  EXPECT_EQ(C({"LINK.LOAD", "1", "123", "5", "1", "0", "500", "a", "6"}),
            "-ERR wrong number of arguments for 'link.load' command");
  EXPECT_EQ(C({"LINK.LOAD", "1", "123", "5", "2", "0", "500", "a"}), "-ERR visibility must be 0 (hidden) or 1 (visible)");
  EXPECT_EQ(C({"LINK.LOAD", "1"}), "-ERR wrong number of arguments for 'link.load' command");
  // No links: the end of the load, which changes nothing.
  EXPECT_EQ(C({"LINK.LOAD", "1", "123"}), ":0");
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":3");
}

TEST_F(GraphSessionTest, LinkGetReturnsHiddenLinksButRangeDoesNot) {
  EXPECT_EQ(AddLink(2, 1, 1000, "visible"), ":1");
  EXPECT_EQ(AddLink(3, 0, 2000, "hidden"), ":1");
  EXPECT_EQ(C({"LINK.GET", "1", "123", "3", "2", "4"}),
            "[[:1, :123, :3, :0, :1, :2000, hidden], [:1, :123, :2, :1, :1, :1000, visible]]");
  EXPECT_EQ(C({"LINK.GET", "1", "123", "2", "2"}), "[[:1, :123, :2, :1, :1, :1000, visible]]");
  EXPECT_EQ(C({"LINK.GET", "1", "124", "2"}), "[]");
  EXPECT_EQ(C({"LINK.RANGE", "1", "123", "0", "9999999", "0", "10"}),
            "[[:1, :123, :2, :1, :1, :1000, visible]]");
}

TEST_F(GraphSessionTest, LinkRangeIsNewestFirstWithTimeWindowOffsetAndLimit) {
  // id2 -> time: 1->10 2->20 3->30 4->40 5->50, and 6->30 (a tie: larger id2 first).
  for (int64_t id2 = 1; id2 <= 5; ++id2) EXPECT_EQ(AddLink(id2, 1, id2 * 10), ":1");
  EXPECT_EQ(AddLink(6, 1, 30), ":1");
  EXPECT_EQ(AddLink(7, 0, 35), ":1");  // hidden: never in a range
  auto ids = [&](std::vector<std::string> range) {
    std::vector<std::string> words = {"LINK.RANGE", "1", "123"};
    words.insert(words.end(), range.begin(), range.end());
    const std::string reply = C(words);
    // Each link prints as "[:1, :123, :<id2>, ...": collect the id2s.
    std::string out;
    for (size_t at = reply.find("[:1, :123, :"); at != std::string::npos;
         at = reply.find("[:1, :123, :", at + 1)) {
      const size_t begin = at + 12;
      absl::StrAppend(&out, out.empty() ? "" : " ", reply.substr(begin, reply.find(',', begin) - begin));
    }
    return out;
  };
  EXPECT_EQ(ids({"0", "9223372036854775807", "0", "10000"}), "5 4 6 3 2 1");
  EXPECT_EQ(ids({"20", "40", "0", "10"}), "4 6 3 2");
  EXPECT_EQ(ids({"20", "40", "1", "2"}), "6 3");
  EXPECT_EQ(ids({"20", "40", "3", "10"}), "2");
  EXPECT_EQ(ids({"20", "40", "4", "10"}), "");
  EXPECT_EQ(ids({"0", "100", "0", "0"}), "");
  EXPECT_EQ(ids({"41", "39", "0", "10"}), "");
  EXPECT_EQ(ids({"-9223372036854775808", "30", "0", "10"}), "6 3 2 1");
  EXPECT_EQ(C({"LINK.RANGE", "1", "123", "50", "50", "0", "1"}),
            "[[:1, :123, :5, :1, :1, :50, d]]");
}

TEST_F(GraphSessionTest, DataIsBinarySafe) {
  const std::string node_data("a\0b\r\nc\xff\r\n*1\r\n$3\r\n", 18);
  const std::string link_data("\0\r\n\0", 4);
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", node_data}), ":1");
  EXPECT_EQ(C({"NODE.GET", "1", "1"}), absl::StrCat("[:1, :1, :1, :1, ", node_data, "]"));
  EXPECT_EQ(C({"NODE.UPDATE", "1", "1", "2", "2", link_data}), ":1");
  EXPECT_EQ(C({"NODE.GET", "1", "1"}), absl::StrCat("[:1, :1, :2, :2, ", link_data, "]"));
  EXPECT_EQ(AddLink(2, 1, 5, link_data), ":1");
  EXPECT_EQ(C({"LINK.GET", "1", "123", "2"}), absl::StrCat("[[:1, :123, :2, :1, :1, :5, ", link_data, "]]"));
  EXPECT_EQ(C({"ECHO", node_data}), node_data);
}

TEST_F(GraphSessionTest, DataAtTheLimitsIsStoredAndOverThemRefused) {
  const std::string node_max(kMaxNodeDataBytes, 'n');
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", node_max}), ":1");
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", node_max + "x"}),
            "-ERR node data is too large (1048577 bytes; the limit is 1048576)");
  EXPECT_EQ(C({"NODE.UPDATE", "1", "1", "2", "2", node_max + "x"}),
            "-ERR node data is too large (1048577 bytes; the limit is 1048576)");
  EXPECT_EQ(C({"NODE.GET", "1", "1"}), absl::StrCat("[:1, :1, :1, :1, ", node_max, "]"));
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "next"}), ":2");  // the refused add took no id

  const std::string link_max(kMaxLinkDataBytes, 'l');
  EXPECT_EQ(AddLink(2, 1, 5, link_max), ":1");
  EXPECT_EQ(AddLink(3, 1, 5, link_max + "x"),
            "-ERR link data is too large (256 bytes; the limit is 255)");
  EXPECT_EQ(AddLink(2, 1, 5, link_max + "x"),
            "-ERR link data is too large (256 bytes; the limit is 255)");
  EXPECT_EQ(C({"LINK.COUNT", "1", "123"}), ":1");
  EXPECT_EQ(C({"LINK.GET", "1", "123", "2", "3"}),
            absl::StrCat("[[:1, :123, :2, :1, :1, :5, ", link_max, "]]"));
}

TEST_F(GraphSessionTest, ConnectionCommands) {
  EXPECT_EQ(C({"PING"}), "+PONG");
  EXPECT_EQ(C({"ping", "hi there"}), "hi there");
  EXPECT_EQ(C({"PING", "a", "b"}), "-ERR wrong number of arguments for 'ping' command");
  EXPECT_EQ(C({"ECHO", "x"}), "x");
  EXPECT_EQ(C({"SELECT", "0"}), "+OK");
  EXPECT_EQ(C({"SELECT", "1"}), "-ERR DB index is out of range");
  EXPECT_EQ(C({"SELECT", "x"}), "-ERR value is not an integer or out of range");
  EXPECT_EQ(C({"COMMAND"}), "[]");
  EXPECT_EQ(C({"COMMAND", "DOCS"}), "[]");
  EXPECT_EQ(C({"COMMAND", "COUNT"}), ":17");
  EXPECT_EQ(C({"HELLO", "3"}), "-ERR unknown command 'HELLO', with args beginning with: '3' ");
}

TEST_F(GraphSessionTest, InlineRequests) {
  EXPECT_THAT(env_.Exchange(*session_, "NODE.ADD 2048 1 100 hi\r\nNODE.GET 1 2048\nPING\r\n"),
              ElementsAre(":1", "[:1, :2048, :1, :100, hi]", "+PONG"));
}

// A pipeline in one Feed: one store operation at a time, replies in request order, and
// no input wanted while an operation runs.
TEST_F(GraphSessionTest, PipelinedRepliesComeInRequestOrder) {
  std::string input;
  std::vector<std::string> expected;
  for (int i = 1; i <= 100; ++i) {
    input += Multibulk({"NODE.ADD", "7", absl::StrCat(i), "1", absl::StrCat("n", i)});
    expected.push_back(absl::StrCat(":", i));
    input += Multibulk({"ECHO", absl::StrCat("#", i)});
    expected.push_back(absl::StrCat("#", i));
    input += Multibulk({"LINK.ADD", "1", "5", absl::StrCat(i), "1", "1", absl::StrCat(i), "x"});
    expected.push_back(":1");
    input += Multibulk({"LINK.COUNT", "1", "5"});
    expected.push_back(absl::StrCat(":", i));
    if (i % 10 == 0) {
      input += Multibulk({"NODE.GET", absl::StrCat(i), "7"});
      expected.push_back(absl::StrCat("[:", i, ", :7, :", i, ", :1, n", i, "]"));
      input += Multibulk({"NOSUCH", "x"});
      expected.push_back("-ERR unknown command 'NOSUCH', with args beginning with: 'x' ");
    }
  }
  session_->Feed(input);
  EXPECT_TRUE(session_->running());
  EXPECT_FALSE(session_->wants_input());
  EXPECT_EQ(env_.Exchange(*session_, ""), expected);
  EXPECT_FALSE(session_->running());
  EXPECT_TRUE(session_->wants_input());

  // The same pipeline byte by byte, on a graph of its own.
  GraphSessionEnv env2;
  auto other = env2.NewSession();
  std::vector<std::string> replies;
  for (size_t i = 0; i < input.size(); ++i) {
    ASSERT_TRUE(other->wants_input());
    std::vector<std::string> got = env2.Exchange(*other, absl::string_view(input).substr(i, 1));
    replies.insert(replies.end(), got.begin(), got.end());
  }
  EXPECT_EQ(replies, expected);
}

TEST_F(GraphSessionTest, QuitAnswersThenCloses) {
  EXPECT_THAT(env_.Exchange(*session_, Multibulk({"PING"}) + Multibulk({"QUIT"}) + Multibulk({"PING"})),
              ElementsAre("+PONG", "+OK"));
  EXPECT_TRUE(session_->close_requested());
  EXPECT_FALSE(session_->wants_input());
  EXPECT_TRUE(env_.Exchange(*session_, Multibulk({"PING"})).empty());
}

TEST_F(GraphSessionTest, ProtocolErrorAnswersEarlierRequestsThenCloses) {
  EXPECT_THAT(env_.Exchange(*session_, Multibulk({"NODE.ADD", "1", "1", "1", "a"}) + "*1\r\n%3\r\n"),
              ElementsAre(":1", "-ERR Protocol error: expected '$', got '%'"));
  EXPECT_TRUE(session_->close_requested());
}

TEST_F(GraphSessionTest, EndOfInputAnswersCompleteRequestsThenCloses) {
  session_->Feed(Multibulk({"NODE.ADD", "1", "1", "1", "a"}) + Multibulk({"LINK.COUNT", "1", "2"}) +
                 "*2\r\n$4\r\nECHO\r\n");  // a partial request: dropped
  session_->EndOfInput();
  EXPECT_FALSE(session_->close_requested());  // the store has not answered yet
  EXPECT_THAT(env_.Exchange(*session_, ""), ElementsAre(":1", ":0"));
  EXPECT_TRUE(session_->close_requested());
}

TEST_F(GraphSessionTest, FullOutputStopsParsingUntilTheClientReads) {
  session_ = env_.NewSession({.max_output_bytes = 10});
  std::string input;
  for (int i = 0; i < 20; ++i) input += Multibulk({"PING"});
  session_->Feed(input);
  EXPECT_EQ(session_->output(), "+PONG\r\n+PONG\r\n");  // 14 bytes >= 10: parsing stopped
  EXPECT_FALSE(session_->wants_input());
  size_t pongs = 0;
  while (!session_->output().empty()) {
    pongs += session_->output().size() / 7;
    session_->ConsumeOutput(session_->output().size());
  }
  EXPECT_EQ(pongs, 20u);
  EXPECT_TRUE(session_->wants_input());
}

TEST_F(GraphSessionTest, OnProgressRunsAfterStoreRepliesOnly) {
  int progress = 0;
  session_->set_on_progress([&] { ++progress; });
  session_->Feed(Multibulk({"PING"}));
  EXPECT_EQ(progress, 0);  // answered inside Feed
  session_->Feed(Multibulk({"NODE.ADD", "1", "1", "1", "a"}) + Multibulk({"LINK.COUNT", "1", "1"}));
  EXPECT_EQ(progress, 0);
  ASSERT_TRUE(env_.Drain());
  EXPECT_EQ(progress, 2);
  EXPECT_EQ(session_->output(), "+PONG\r\n:1\r\n:0\r\n");
}

TEST_F(GraphSessionTest, SessionMayGoAwayWhileItsOperationRuns) {
  session_->Feed(Multibulk({"NODE.ADD", "1", "1", "1", "a"}));
  EXPECT_TRUE(session_->running());
  session_.reset();
  ASSERT_TRUE(env_.Drain());
  EXPECT_TRUE(env_.graph().GetNode(1, 1).has_value());  // a started write completes
}

TEST_F(GraphSessionTest, CountersCountCommandsErrorsAndProtocolErrors) {
  ::farm::resp::RespCounters counters;
  session_ = env_.NewSession({.counters = &counters});
  env_.Exchange(*session_, Multibulk({"PING"}) + Multibulk({"NOSUCH"}) +
                               Multibulk({"NODE.GET", "x", "1"}) + Multibulk({"LINK.COUNT", "1", "1"}) +
                               "*1\r\n$-5\r\n");
  const ::farm::resp::RespStats stats = counters.Snapshot();
  EXPECT_EQ(stats.commands, 4u);
  EXPECT_EQ(stats.error_replies, 3u);
  EXPECT_EQ(stats.protocol_errors, 1u);
}

}  // namespace
}  // namespace farm::graph
