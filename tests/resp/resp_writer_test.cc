// RespWriter's encodings, byte for byte (RESP2, as Redis writes them), and that each
// reply is appended after what the buffer held.
#include "resp/resp_writer.h"

#include <cstdint>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace farm::resp {
namespace {

TEST(RespWriterTest, IntegersAtTheEdgesOfInt64) {
  std::string out;
  RespWriter w(&out);
  w.Integer(0);
  w.Integer(-1);
  w.Integer(std::numeric_limits<int64_t>::max());
  w.Integer(std::numeric_limits<int64_t>::min());
  EXPECT_EQ(out, ":0\r\n:-1\r\n:9223372036854775807\r\n:-9223372036854775808\r\n");
  EXPECT_EQ(std::string(":-9223372036854775808\r\n").size(), RespWriter::kMaxIntegerBytes);
}

TEST(RespWriterTest, BulksAndArrayHeaders) {
  std::string out = "kept";
  RespWriter w(&out);
  w.ArrayHeader(3);
  w.Bulk("");
  w.Bulk(std::string("a\r\n\0b", 5));
  w.NullBulk();
  w.ArrayHeader(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(out, std::string("kept*3\r\n$0\r\n\r\n$5\r\na\r\n\0b\r\n$-1\r\n*18446744073709551615\r\n", 53));
}

TEST(RespWriterTest, ReserveKeepsWhatWasWritten) {
  std::string out;
  RespWriter w(&out);
  w.SimpleString("OK");
  w.Reserve(1 << 16);
  EXPECT_GE(out.capacity(), out.size() + (1 << 16));
  w.Error("ERR two\r\nlines");
  EXPECT_EQ(out, "+OK\r\n-ERR two  lines\r\n");
}

}  // namespace
}  // namespace farm::resp
