#include "farm/base/crc32c.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace farm {
namespace {

// The definition, a bit at a time.
uint32_t Reference(const std::string& s) {
  uint32_t crc = ~0u;
  for (unsigned char byte : s) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32c, StandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32c, MatchesTheBitwiseDefinitionAtEveryLengthAndAlignment) {
  std::mt19937_64 rng(5);
  std::string data(300, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; n + start <= data.size(); n += 7) {
      const std::string piece = data.substr(start, n);
      ASSERT_EQ(Crc32c(piece), Reference(piece)) << start << " " << n;
    }
  }
}

}  // namespace
}  // namespace farm
