#include "farm/base/crc32c.h"

#include <array>
#include <cstring>

namespace farm {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (kPolynomial & (0u - (crc & 1u)));
    t[0][i] = crc;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

// The table-driven update of a running (pre-inverted) CRC state.
uint32_t UpdateSoftware(uint32_t crc, absl::string_view data) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);  // little-endian hosts (x86-64, AArch64)
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
          kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
          kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
// SSE4.2's CRC32 instruction computes exactly this polynomial, 8 bytes per instruction.
__attribute__((target("sse4.2"))) uint32_t UpdateHardware(uint32_t crc, absl::string_view data) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

bool CpuHasCrc32() { return __builtin_cpu_supports("sse4.2"); }
#else
uint32_t UpdateHardware(uint32_t crc, absl::string_view data) { return UpdateSoftware(crc, data); }
bool CpuHasCrc32() { return false; }
#endif

// Chosen once: the CPU does not change under a running process.
const bool kHardware = CpuHasCrc32();

uint32_t Update(uint32_t crc, absl::string_view data) {
  return kHardware ? UpdateHardware(crc, data) : UpdateSoftware(crc, data);
}

}  // namespace

uint32_t Crc32c(absl::string_view data) { return ~Update(~0u, data); }

uint32_t Crc32cExtend(uint32_t crc, absl::string_view data) { return ~Update(~crc, data); }

bool Crc32cInHardware() { return kHardware; }

uint32_t Crc32cSoftwareForTest(absl::string_view data) { return ~UpdateSoftware(~0u, data); }

}  // namespace farm
