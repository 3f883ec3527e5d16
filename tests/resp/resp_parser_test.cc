#include "resp/resp_parser.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace farm::resp {
namespace {

using Requests = std::vector<std::vector<std::string>>;

// Parses everything available; appends requests; returns the last result.
RespParser::Result ParseAll(RespParser& parser, Requests* out) {
  for (;;) {
    const RespParser::Result r = parser.Parse();
    if (r != RespParser::Result::kRequest) return r;
    auto args = parser.args();
    out->emplace_back(args.begin(), args.end());
  }
}

Requests ParseWhole(absl::string_view input, const RespParserLimits& limits = {}) {
  RespParser parser(limits);
  parser.Feed(input);
  Requests requests;
  EXPECT_EQ(ParseAll(parser, &requests), RespParser::Result::kNeedMore);
  EXPECT_EQ(parser.buffered_bytes(), 0u);
  return requests;
}

// The error a whole input ends in (requests before it are parsed normally).
std::string ErrorOf(absl::string_view input, const RespParserLimits& limits = {}) {
  RespParser parser(limits);
  parser.Feed(input);
  Requests requests;
  if (ParseAll(parser, &requests) != RespParser::Result::kError) return "(no error)";
  return parser.error();
}

TEST(RespParserTest, Multibulk) {
  EXPECT_EQ(ParseWhole("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n"),
            (Requests{{"SET", "k", "value"}}));
}

TEST(RespParserTest, MultibulkArgumentsAreBinary) {
  const std::string value("a\r\nb\0c", 6);
  EXPECT_EQ(ParseWhole(absl::StrCat("*2\r\n$4\r\nECHO\r\n$6\r\n", value, "\r\n")),
            (Requests{{"ECHO", value}}));
  EXPECT_EQ(ParseWhole("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"), (Requests{{"ECHO", ""}}));
}

TEST(RespParserTest, Inline) {
  EXPECT_EQ(ParseWhole("PING\r\n"), (Requests{{"PING"}}));
  EXPECT_EQ(ParseWhole("PING\n"), (Requests{{"PING"}}));
  EXPECT_EQ(ParseWhole("  SET \t k  v \r\n"), (Requests{{"SET", "k", "v"}}));
}

// As Redis splits an inline line (sdssplitargs).
TEST(RespParserTest, InlineQuotes) {
  using std::string_literals::operator""s;
  EXPECT_EQ(ParseWhole("SET k \"a b\"\n"), (Requests{{"SET", "k", "a b"}}));
  EXPECT_EQ(ParseWhole("SET k 'a b'\r\n"), (Requests{{"SET", "k", "a b"}}));
  EXPECT_EQ(ParseWhole("ECHO \"\\n\\r\\t\\b\\a\\x41\\x7a\\\"\\q\"\n"),
            (Requests{{"ECHO", "\n\r\t\b\aAz\"q"}}));
  EXPECT_EQ(ParseWhole("ECHO \"\\x00\\xZZ\"\n"), (Requests{{"ECHO", "\0xZZ"s}}));
  EXPECT_EQ(ParseWhole("ECHO 'it\\'s' '\\n'\n"), (Requests{{"ECHO", "it's", "\\n"}}));
  EXPECT_EQ(ParseWhole("ECHO \"\" ''\n"), (Requests{{"ECHO", "", ""}}));
  // A quote opens inside a word, and the word goes on to its end.
  EXPECT_EQ(ParseWhole("ECHO ab\"c d\" e\n"), (Requests{{"ECHO", "abc d", "e"}}));
  // A closing quote followed by a space of any kind (\v here).
  EXPECT_EQ(ParseWhole("ECHO \"a\"\vb\n"), (Requests{{"ECHO", "a", "b"}}));
  // A NUL byte ends the line.
  EXPECT_EQ(ParseWhole("ECHO a\0b c\n"s), (Requests{{"ECHO", "a"}}));
  for (const std::string& bad : {"ECHO \"abc\n"s, "ECHO 'abc\n"s, "ECHO \"a\"b\n"s, "ECHO 'a'b\n"s,
                                 "ECHO \"a\\\"\n"s, "ECHO \"a\0\"\n"s, "ECHO 'a\0'\n"s}) {
    EXPECT_EQ(ErrorOf(bad), "ERR Protocol error: unbalanced quotes in request") << bad;
  }
  // The requests before it are answered.
  RespParser parser;
  parser.Feed("PING\r\nECHO \"open\r\nPING\r\n");
  Requests requests;
  EXPECT_EQ(ParseAll(parser, &requests), RespParser::Result::kError);
  EXPECT_EQ(requests, (Requests{{"PING"}}));
}

// Any bytes survive inline quoting: random words, each written "..." with \xHH for every
// byte that is not a letter or digit, or '...' when it has no ', \, NUL or newline, come
// back as they were.
TEST(RespParserTest, InlineQuotingRoundTripsAnyBytes) {
  std::mt19937 rng(20261202);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> words(1 + rng() % 5);
    std::string line;
    for (std::string& w : words) {
      w.resize(rng() % 12);
      for (char& c : w) c = static_cast<char>(rng() % 4 == 0 ? "'\\\" \n"[rng() % 5] : rng() % 256);
      if (!line.empty()) line += " \t"[rng() % 2];
      if (w.find_first_of(std::string("'\\\0\n", 4)) == std::string::npos && rng() % 3 == 0) {
        absl::StrAppend(&line, "'", w, "'");
        continue;
      }
      line += '"';
      for (char c : w) {
        if (absl::ascii_isalnum(static_cast<unsigned char>(c))) {
          line += c;
        } else {
          absl::StrAppendFormat(&line, "\\x%02X", static_cast<unsigned char>(c));
        }
      }
      line += '"';
    }
    EXPECT_EQ(ParseWhole(line + "\r\n"), (Requests{words})) << absl::CHexEscape(line);
    if (HasFailure()) break;
  }
}

TEST(RespParserTest, EmptyRequestsAreSkipped) {
  EXPECT_EQ(ParseWhole("\r\n\n   \r\n*0\r\n*-1\r\nPING\r\n"), (Requests{{"PING"}}));
}

TEST(RespParserTest, PipelinedMixedRequests) {
  EXPECT_EQ(ParseWhole("*1\r\n$4\r\nPING\r\nECHO hi\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
            (Requests{{"PING"}, {"ECHO", "hi"}, {"GET", "k"}}));
}

TEST(RespParserTest, EveryFrameSplitAtEveryBytePosition) {
  using std::string_literals::operator""s;
  const std::string input = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\nva\r\nlue\0xy\r\n"s +
                            "PING\r\n"
                            "\r\n"
                            "*0\r\n"
                            "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
                            "  MGET a  b\n"
                            "*1\r\n$4\r\nQUIT\r\n";
  const Requests expected = ParseWhole(input);
  ASSERT_EQ(expected.size(), 5u);
  EXPECT_EQ(expected[0][2], "va\r\nlue\0xy"s);
  for (size_t split = 0; split <= input.size(); ++split) {
    RespParser parser;
    Requests got;
    parser.Feed(absl::string_view(input).substr(0, split));
    ASSERT_EQ(ParseAll(parser, &got), RespParser::Result::kNeedMore) << "split " << split;
    parser.Feed(absl::string_view(input).substr(split));
    ASSERT_EQ(ParseAll(parser, &got), RespParser::Result::kNeedMore) << "split " << split;
    EXPECT_EQ(got, expected) << "split " << split;
  }
  // And one byte at a time.
  RespParser parser;
  Requests got;
  for (char c : input) {
    parser.Feed(absl::string_view(&c, 1));
    ASSERT_EQ(ParseAll(parser, &got), RespParser::Result::kNeedMore);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(parser.buffered_bytes(), 0u);
}

TEST(RespParserTest, InvalidMultibulkLength) {
  const std::string kError = "ERR Protocol error: invalid multibulk length";
  EXPECT_EQ(ErrorOf("*x\r\n"), kError);
  EXPECT_EQ(ErrorOf("*1 \r\n"), kError);
  EXPECT_EQ(ErrorOf("*+1\r\n"), kError);
  EXPECT_EQ(ErrorOf("*01\r\n"), kError);
  EXPECT_EQ(ErrorOf("*\r\n"), kError);
  EXPECT_EQ(ErrorOf("*99999999999999999999999\r\n"), kError);
  EXPECT_EQ(ErrorOf("*1\n$4\r\nPING\r\n"), kError);  // a header must end in \r\n
  EXPECT_EQ(ErrorOf("*1\rx"), kError);
  EXPECT_EQ(ErrorOf(absl::StrCat("*", 1024 * 1024 + 1, "\r\n")), kError);
  // At the limit it is fine (and nothing is allocated for it up front).
  RespParser parser;
  parser.Feed(absl::StrCat("*", 1024 * 1024, "\r\n"));
  EXPECT_EQ(parser.Parse(), RespParser::Result::kNeedMore);
}

TEST(RespParserTest, InvalidBulkLength) {
  const std::string kError = "ERR Protocol error: invalid bulk length";
  EXPECT_EQ(ErrorOf("*1\r\n$x\r\n"), kError);
  EXPECT_EQ(ErrorOf("*1\r\n$-1\r\n"), kError);
  EXPECT_EQ(ErrorOf("*1\r\n$+4\r\nPING\r\n"), kError);
  EXPECT_EQ(ErrorOf("*1\r\n$04\r\nPING\r\n"), kError);
  EXPECT_EQ(ErrorOf("*1\r\n$\r\n"), kError);
  EXPECT_EQ(ErrorOf("*1\r\n$4\rPING\r\n"), kError);
}

TEST(RespParserTest, BulkLengthIsCheckedBeforeTheDataArrives) {
  RespParserLimits limits;
  limits.max_bulk_bytes = 10;
  EXPECT_EQ(ParseWhole("*1\r\n$10\r\n0123456789\r\n", limits), (Requests{{"0123456789"}}));
  // Only the header: refused at once, without waiting for (or buffering) 11 bytes.
  EXPECT_EQ(ErrorOf("*1\r\n$11\r\n", limits), "ERR Protocol error: invalid bulk length");
}

TEST(RespParserTest, ExpectedDollar) {
  EXPECT_EQ(ErrorOf("*1\r\n:3\r\n"), "ERR Protocol error: expected '$', got ':'");
  EXPECT_EQ(ErrorOf("*2\r\n$1\r\na\r\n*1\r\n"), "ERR Protocol error: expected '$', got '*'");
}

TEST(RespParserTest, MissingCrlfAfterBulkData) {
  EXPECT_EQ(ErrorOf("*1\r\n$3\r\nGETx\r\n"), "ERR Protocol error: expected CRLF after bulk data");
  EXPECT_EQ(ErrorOf("*1\r\n$3\r\nGET\n\r"), "ERR Protocol error: expected CRLF after bulk data");
}

TEST(RespParserTest, TooBigInlineRequest) {
  RespParser parser;
  parser.Feed(std::string(64 * 1024, 'a'));
  EXPECT_EQ(parser.Parse(), RespParser::Result::kNeedMore);  // exactly at the limit
  parser.Feed("a");
  EXPECT_EQ(parser.Parse(), RespParser::Result::kError);
  EXPECT_EQ(parser.error(), "ERR Protocol error: too big inline request");
}

TEST(RespParserTest, TooBigHeaderLines) {
  EXPECT_EQ(ErrorOf(absl::StrCat("*", std::string(70 * 1024, '1'))),
            "ERR Protocol error: too big mbulk count string");
  EXPECT_EQ(ErrorOf(absl::StrCat("*1\r\n$", std::string(70 * 1024, '1'))),
            "ERR Protocol error: too big bulk count string");
}

TEST(RespParserTest, RequestTooBig) {
  RespParserLimits limits;
  limits.max_request_bytes = 100;
  EXPECT_EQ(ParseWhole("*2\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n", limits).size(), 1u);
  std::string many = "*20\r\n";
  for (int i = 0; i < 20; ++i) many += "$1\r\nx\r\n";
  EXPECT_EQ(ErrorOf(many, limits), "ERR Protocol error: request too big");
}

TEST(RespParserTest, UnauthenticatedLimits) {
  const RespParserLimits limits = UnauthenticatedLimits({});
  EXPECT_EQ(ErrorOf("*11\r\n", limits), "ERR Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(ErrorOf("*2\r\n$4\r\nAUTH\r\n$16385\r\n", limits),
            "ERR Protocol error: unauthenticated bulk length");
  EXPECT_EQ(ParseWhole("*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n", limits),
            (Requests{{"AUTH", "secret"}}));
}

TEST(RespParserTest, ErrorIsSticky) {
  RespParser parser;
  parser.Feed("PING\r\n*x\r\nPING\r\n");
  EXPECT_EQ(parser.Parse(), RespParser::Result::kRequest);
  EXPECT_EQ(parser.Parse(), RespParser::Result::kError);
  EXPECT_TRUE(parser.failed());
  parser.Feed("PING\r\n");
  EXPECT_EQ(parser.Parse(), RespParser::Result::kError);
  EXPECT_EQ(parser.error(), "ERR Protocol error: invalid multibulk length");
}

TEST(RespParserTest, ArgumentStorageIsReused) {
  const std::string value(200, 'v');
  const std::string request = absl::StrCat("*2\r\n$3\r\nSET\r\n$200\r\n", value, "\r\n");
  RespParser parser;
  parser.Feed(request);
  ASSERT_EQ(parser.Parse(), RespParser::Result::kRequest);
  const char* storage = parser.args()[1].data();
  for (int i = 0; i < 10; ++i) {
    parser.Feed(request);
    ASSERT_EQ(parser.Parse(), RespParser::Result::kRequest);
    EXPECT_EQ(parser.args()[1].data(), storage) << "request " << i;
    EXPECT_EQ(parser.args()[1], value);
  }
}

TEST(RespParserTest, ConsumedInputIsReleased) {
  RespParser parser;
  std::string many;
  for (int i = 0; i < 10000; ++i) many += "*1\r\n$4\r\nPING\r\n";
  parser.Feed(many);
  Requests got;
  EXPECT_EQ(ParseAll(parser, &got), RespParser::Result::kNeedMore);
  EXPECT_EQ(got.size(), 10000u);
  EXPECT_EQ(parser.buffered_bytes(), 0u);
  // A partial request keeps only itself buffered.
  parser.Feed("*1\r\n$100\r\nabc");
  EXPECT_EQ(parser.Parse(), RespParser::Result::kNeedMore);
  EXPECT_EQ(parser.buffered_bytes(), 3u);
}

}  // namespace
}  // namespace farm::resp
