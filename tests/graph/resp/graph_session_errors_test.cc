// GraphSession's error replies: arities, unknown commands, integer syntax and ranges,
// visibility, offset and limit, LINK.DELETE's option, and store errors mapped without
// internal detail. Every error is a reply: the connection goes on.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "graph/resp/graph_session.h"
#include "tests/graph/resp/graph_session_env.h"

namespace farm::graph {
namespace {

using ::farm::graph::testing::GraphSessionEnv;

constexpr char kNotAnInteger[] = "-ERR value is not an integer or out of range";

class GraphSessionErrorsTest : public ::testing::Test {
 protected:
  std::string C(std::vector<std::string> words) { return env_.Command(*session_, std::move(words)); }

  GraphSessionEnv env_;
  std::shared_ptr<GraphSession> session_ = env_.NewSession();
};

TEST_F(GraphSessionErrorsTest, WrongArityUsesRedisWording) {
  const std::vector<std::vector<std::string>> cases = {
      {"NODE.ADD", "1", "1", "1"},
      {"NODE.ADD", "1", "1", "1", "d", "extra"},
      {"NODE.GET", "1"},
      {"NODE.UPDATE", "1", "1", "1", "1"},
      {"NODE.DELETE"},
      {"NODE.RESET"},
      {"NODE.RESET", "1", "2"},
      {"LINK.ADD", "1", "2", "3", "1", "1", "1"},
      {"LINK.DELETE", "1", "2"},
      {"LINK.GET", "1", "2"},
      {"LINK.RANGE", "1", "2", "0", "10", "0"},
      {"LINK.COUNT", "1"},
      {"ECHO"},
      {"SELECT"},
  };
  for (const auto& words : cases) {
    std::string name = words[0];
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(C(words), absl::StrCat("-ERR wrong number of arguments for '", name, "' command"));
  }
  EXPECT_EQ(C({"Node.Add", "1"}), "-ERR wrong number of arguments for 'node.add' command");
  EXPECT_EQ(C({"PING"}), "+PONG");  // the connection goes on
}

TEST_F(GraphSessionErrorsTest, UnknownCommandUsesRedis7Wording) {
  EXPECT_EQ(C({"FOO", "a", "b"}), "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' ");
  EXPECT_EQ(C({"NODE.ADDX"}), "-ERR unknown command 'NODE.ADDX', with args beginning with: ");
  EXPECT_EQ(C({"GET", std::string(200, 'k')}),
            absl::StrCat("-ERR unknown command 'GET', with args beginning with: '",
                         std::string(128, 'k'), "' "));
  EXPECT_EQ(C({"X", std::string("a\0b", 3)}), "-ERR unknown command 'X', with args beginning with: 'a' ");
  EXPECT_EQ(C({"X", "a\r\nb"}), "-ERR unknown command 'X', with args beginning with: 'a  b' ");
}

TEST_F(GraphSessionErrorsTest, IntegersMustBeStrictAndWithinTheirTypes) {
  const std::vector<std::vector<std::string>> cases = {
      {"NODE.ADD", "x", "1", "1", "d"},
      {"NODE.ADD", "2147483648", "1", "1", "d"},   // type: int32
      {"NODE.ADD", "-2147483649", "1", "1", "d"},
      {"NODE.ADD", "1", "9223372036854775808", "1", "d"},  // version: int64
      {"NODE.ADD", "1", "1", "2147483648", "d"},   // time: int32
      {"NODE.ADD", "01", "1", "1", "d"},
      {"NODE.ADD", "+1", "1", "1", "d"},
      {"NODE.ADD", "-0", "1", "1", "d"},
      {"NODE.ADD", " 1", "1", "1", "d"},
      {"NODE.ADD", "", "1", "1", "d"},
      {"NODE.ADD", "1.5", "1", "1", "d"},
      {"NODE.GET", "1", "2147483648"},
      {"NODE.GET", "9223372036854775808", "1"},
      {"NODE.UPDATE", "1", "1", "1", "x", "d"},
      {"NODE.DELETE", "a", "1"},
      {"NODE.RESET", "1e3"},
      {"LINK.ADD", "1", "2", "3", "1", "2147483648", "1", "d"},  // version: int32
      {"LINK.ADD", "1", "2", "3", "1", "1", "9223372036854775808", "d"},
      {"LINK.ADD", "x", "2", "3", "1", "1", "1", "d"},
      {"LINK.ADD", "1", "2", "3", "x", "1", "1", "d"},
      {"LINK.DELETE", "1", "2", "z"},
      {"LINK.GET", "1", "2", "3", "x"},
      {"LINK.RANGE", "1", "2", "0", "1e9", "0", "10"},
      {"LINK.RANGE", "1", "2", "0", "10", "0", "ten"},
      {"LINK.COUNT", "1", "two"},
  };
  for (const auto& words : cases) {
    SCOPED_TRACE(absl::StrJoin(words, " "));
    EXPECT_EQ(C(words), kNotAnInteger);
  }
  EXPECT_EQ(env_.store().operations(), 0u);  // nothing reached the store
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "d"}), ":1");  // no id was taken
}

TEST_F(GraphSessionErrorsTest, VisibilityOffsetAndLimitHaveClearErrors) {
  EXPECT_EQ(C({"LINK.ADD", "1", "2", "3", "2", "1", "1", "d"}),
            "-ERR visibility must be 0 (hidden) or 1 (visible)");
  EXPECT_EQ(C({"LINK.ADD", "1", "2", "3", "-1", "1", "1", "d"}),
            "-ERR visibility must be 0 (hidden) or 1 (visible)");
  EXPECT_EQ(C({"LINK.RANGE", "1", "2", "0", "10", "0", "10001"}),
            "-ERR limit is out of range, must be between 0 and 10000");
  EXPECT_EQ(C({"LINK.RANGE", "1", "2", "0", "10", "0", "-1"}),
            "-ERR limit is out of range, must be between 0 and 10000");
  EXPECT_EQ(C({"LINK.RANGE", "1", "2", "0", "10", "-1", "10"}),
            "-ERR offset is out of range, must be between 0 and 4294967295");
  EXPECT_EQ(C({"LINK.RANGE", "1", "2", "0", "10", "4294967296", "10"}),
            "-ERR offset is out of range, must be between 0 and 4294967295");
  EXPECT_EQ(C({"LINK.RANGE", "1", "2", "0", "10", "4294967295", "10000"}), "[]");
  EXPECT_EQ(C({"LINK.DELETE", "1", "2", "3", "FORCE"}), "-ERR syntax error");
  EXPECT_EQ(C({"LINK.DELETE", "1", "2", "3", "EXPUNGE", "EXPUNGE"}), "-ERR syntax error");
  EXPECT_EQ(C({"LINK.DELETE", "x", "2", "3", "FORCE"}), kNotAnInteger);  // left to right
  EXPECT_EQ(C({"LINK.COUNT", "1", "2"}), ":0");
}

TEST_F(GraphSessionErrorsTest, StoreErrorsAreRepliesWithoutInternalDetail) {
  env_.store().FailNext(absl::UnavailableError("node 3 at r7+0x1f00 did not answer"));
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "d"}),
            "-TRYAGAIN the graph store did not answer in time; a write may or may not have happened");
  env_.store().FailNext(absl::DeadlineExceededError("r1+0x40"));
  EXPECT_EQ(C({"LINK.COUNT", "1", "1"}),
            "-TRYAGAIN the graph store did not answer in time; a write may or may not have happened");
  env_.store().FailNext(absl::ResourceExhaustedError("region 4 full"));
  EXPECT_EQ(C({"LINK.ADD", "1", "2", "3", "1", "1", "1", "d"}), "-OOM the graph store's memory is full");
  env_.store().FailNext(absl::AbortedError("conflict on r9+0x10"));
  EXPECT_EQ(C({"LINK.DELETE", "1", "2", "3"}),
            "-TRYAGAIN the operation conflicted with others too often and changed nothing");
  env_.store().FailNext(absl::InternalError("lock word of r2+0x80 is corrupt"));
  EXPECT_EQ(C({"NODE.GET", "1", "1"}), "-ERR the graph store failed (INTERNAL)");
  env_.store().FailNext(absl::InvalidArgumentError("line one\r\nline two"));
  EXPECT_EQ(C({"LINK.RANGE", "1", "1", "0", "1", "0", "1"}), "-ERR line one  line two");
  env_.store().FailNext(absl::UnavailableError(""));
  EXPECT_EQ(C({"NODE.RESET", "5"}),
            "-TRYAGAIN the graph store did not answer in time; a write may or may not have happened");
  // Nothing happened in the graph; the connection goes on.
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "d"}), ":1");
  EXPECT_EQ(C({"LINK.COUNT", "1", "2"}), ":0");
}

// The last id is handed out once; then the store refuses (no signed overflow).
TEST_F(GraphSessionErrorsTest, NodeAddAfterResetToTheLastIdIsRefused) {
  EXPECT_EQ(C({"NODE.RESET", "9223372036854775807"}), "+OK");
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "d"}), ":9223372036854775807");
  EXPECT_EQ(C({"NODE.ADD", "1", "1", "1", "d"}).substr(0, 1), "-");
}

}  // namespace
}  // namespace farm::graph
