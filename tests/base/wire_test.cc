// The wire encoding: little-endian bytes whatever the host, and a reader that never
// reads past the end.
#include "farm/base/wire.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace farm {
namespace {

enum class Kind : uint8_t { kA = 7 };

TEST(WireTest, IntegersAreLittleEndian) {
  char b[8];
  StoreLe<uint32_t>(b, 0x01020304u);
  EXPECT_EQ(std::string(b, 4), std::string("\x04\x03\x02\x01", 4));
  StoreLe<uint16_t>(b, 0xA1B2);
  EXPECT_EQ(std::string(b, 2), std::string("\xB2\xA1", 2));
  StoreLe<uint64_t>(b, 0x0102030405060708ull);
  EXPECT_EQ(std::string(b, 8), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  EXPECT_EQ(LoadLe<uint64_t>(b), 0x0102030405060708ull);
  StoreLe<int64_t>(b, -2);
  EXPECT_EQ(LoadLe<int64_t>(b), -2);
}

TEST(WireTest, WriterAndReaderRoundTrip) {
  std::string out = "x";  // a writer appends to what is there
  WireWriter(&out)
      .Put<uint8_t>(1)
      .Put<uint16_t>(2)
      .Put<uint32_t>(3)
      .Put<int64_t>(-4)
      .Put(Kind::kA)
      .Bytes("tail");
  EXPECT_EQ(out.size(), 1u + 1 + 2 + 4 + 8 + 1 + 4);
  WireReader r(absl::string_view(out).substr(1));
  uint8_t a = 0;
  uint16_t b = 0;
  uint32_t c = 0;
  int64_t d = 0;
  Kind k{};
  absl::string_view tail;
  ASSERT_TRUE(r.Get(&a) && r.Get(&b) && r.Get(&c) && r.Get(&d) && r.Get(&k) && r.Bytes(4, &tail));
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(c, 3u);
  EXPECT_EQ(d, -4);
  EXPECT_EQ(k, Kind::kA);
  EXPECT_EQ(tail, "tail");
  EXPECT_TRUE(r.done());
  EXPECT_EQ(WireWriter().Put<uint16_t>(0x0102).Take(), std::string("\x02\x01", 2));
}

TEST(WireTest, AReaderFailsAtTheEndWithoutConsuming) {
  const std::string three("\x01\x02\x03", 3);
  WireReader r(three);
  uint32_t v = 99;
  EXPECT_FALSE(r.Get(&v));
  EXPECT_EQ(v, 99u);
  EXPECT_EQ(r.left(), 3u);
  absl::string_view bytes;
  EXPECT_FALSE(r.Bytes(4, &bytes));
  uint16_t w = 0;
  ASSERT_TRUE(r.Get(&w));
  EXPECT_EQ(w, 0x0201);
  EXPECT_FALSE(r.Get(&w));
  EXPECT_EQ(r.left(), 1u);
}

}  // namespace
}  // namespace farm
