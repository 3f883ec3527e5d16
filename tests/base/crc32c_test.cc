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
      ASSERT_EQ(Crc32cSoftwareForTest(piece), Reference(piece)) << start << " " << n;
    }
  }
}

TEST(Crc32c, ExtendingEqualsTheWhole) {
  std::mt19937_64 rng(9);
  std::string data(200, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t cut = 0; cut <= data.size(); cut += 13) {
    ASSERT_EQ(Crc32cExtend(Crc32c(data.substr(0, cut)), data.substr(cut)), Crc32c(data)) << cut;
  }
}

#if defined(__x86_64__)
TEST(Crc32c, UsesTheCpuInstructionWhereThereIsOne) {
  EXPECT_EQ(Crc32cInHardware(), __builtin_cpu_supports("sse4.2") != 0);
}
#endif

}  // namespace
}  // namespace farm
