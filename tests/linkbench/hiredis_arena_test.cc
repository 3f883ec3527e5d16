// HiredisArena (tools/linkbench/hiredis_arena.h): a hiredis reader building its replies
// in the arena gives the same replies as hiredis's own objects, for every kind of reply
// and fed in any pieces, and reuses its blocks from one reply to the next.
#include "tools/linkbench/hiredis_arena.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "resp/resp_writer.h"

namespace farm::linkbench {
namespace {

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};
using Reader = std::unique_ptr<redisReader, ReaderDeleter>;

// The reply as text on one line: type, value (escaped), and the elements in brackets.
std::string Describe(const redisReply& r) {
  switch (r.type) {
    case REDIS_REPLY_INTEGER:
      return absl::StrCat(":", r.integer);
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_ARRAY: {
      std::string s = absl::StrCat("*", r.elements, "[");
      for (size_t i = 0; i < r.elements; ++i) absl::StrAppend(&s, Describe(*r.element[i]), ",");
      return s + "]";
    }
    default:
      return absl::StrCat(r.type, "'", absl::CEscape(absl::string_view(r.str, r.len)), "'",
                          r.str[r.len] == '\0' ? "" : "(no NUL)");
  }
}

// Every reply in `encoded`, fed `piece` bytes at a time, described; "ERROR" for a
// protocol error.
std::string ReadAll(redisReader* reader, const std::string& encoded, size_t piece, bool own_objects) {
  std::string out;
  size_t fed = 0;
  while (true) {
    void* reply = nullptr;
    if (redisReaderGetReply(reader, &reply) != REDIS_OK) return out + "ERROR";
    if (reply != nullptr) {
      absl::StrAppend(&out, Describe(*static_cast<redisReply*>(reply)), "\n");
      if (own_objects) freeReplyObject(reply);
      continue;
    }
    if (fed == encoded.size()) return out;
    const size_t n = std::min(piece, encoded.size() - fed);
    if (redisReaderFeed(reader, encoded.data() + fed, n) != REDIS_OK) return out + "ERROR";
    fed += n;
  }
}

// Replies of every kind the graph service sends, and a long LINK.RANGE.
std::string Replies(int links) {
  std::string out;
  resp::RespWriter w(&out);
  w.SimpleString("OK");
  w.Error("ERR wrong number of arguments for 'link.add' command");
  w.Integer(-9223372036854775807 - 1);
  w.NullBulk();
  w.Bulk(std::string("bin\0ary\r\n", 9));
  w.Bulk("");
  w.ArrayHeader(0);
  w.NullArray();
  w.ArrayHeader(3);
  w.ArrayHeader(2);
  w.Integer(1);
  w.NullBulk();
  w.ArrayHeader(0);
  w.Bulk("after");
  w.ArrayHeader(static_cast<size_t>(links));
  for (int i = 0; i < links; ++i) {
    w.ArrayHeader(7);
    for (int f = 0; f < 6; ++f) w.Integer(1000L * i + f);
    w.Bulk(std::string(static_cast<size_t>(i % 40), 'a' + i % 26));
  }
  return out;
}

TEST(HiredisArenaTest, RepliesAreHiredisOwnInEveryPiecing) {
  const std::string encoded = Replies(3000);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, encoded.size()}) {
    SCOPED_TRACE(absl::StrCat("fed ", piece, " bytes at a time"));
    Reader plain(redisReaderCreate());
    const std::string expected = ReadAll(plain.get(), encoded, piece, /*own_objects=*/true);
    ASSERT_EQ(std::count(expected.begin(), expected.end(), '\n'), 10) << "one line per reply";
    HiredisArena arena;
    Reader reader(redisReaderCreate());
    arena.Attach(reader.get());
    EXPECT_EQ(ReadAll(reader.get(), encoded, piece, /*own_objects=*/false), expected);
  }
}

TEST(HiredisArenaTest, BlocksAreReusedFromReplyToReply) {
  HiredisArena arena;
  Reader reader(redisReaderCreate());
  arena.Attach(reader.get());
  std::string one;
  resp::RespWriter w(&one);
  w.ArrayHeader(2000);
  for (int i = 0; i < 2000; ++i) w.Bulk(std::string(100, 'x'));
  const std::string first = ReadAll(reader.get(), one, one.size(), false);
  const size_t kept = arena.capacity();
  EXPECT_GT(kept, 2000u * 100);
  std::string many, expected;
  for (int i = 0; i < 50; ++i) {
    many += one;
    expected += first;
  }
  EXPECT_EQ(ReadAll(reader.get(), many, 65536, false), expected);
  EXPECT_EQ(arena.capacity(), kept) << "a reply of the same size takes the same blocks again";
}

TEST(HiredisArenaTest, AProtocolErrorIsReported) {
  HiredisArena arena;
  Reader reader(redisReaderCreate());
  arena.Attach(reader.get());
  EXPECT_EQ(ReadAll(reader.get(), "*2\r\n:1\r\n?bad\r\n", 100, false), "ERROR");
}

}  // namespace
}  // namespace farm::linkbench
