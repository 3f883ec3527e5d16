// CRC-32C (Castagnoli), as in iSCSI, ext4 and ZooKeeper-free places that need one:
// checksums of configuration envelopes and transaction log records.
#ifndef FARM_BASE_CRC32C_H_
#define FARM_BASE_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace farm {

// CRC-32C of `data` ("123456789" gives 0xE3069283): the CPU's CRC32 instruction where it
// has one (x86-64 with SSE4.2, chosen at start), else slicing-by-8 tables (about 1-2 GB/s
// per core).
uint32_t Crc32c(absl::string_view data);
// The CRC-32C of the bytes `crc` was computed over followed by `data`:
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, absl::string_view data);
// Whether Crc32c uses the CPU's instruction.
bool Crc32cInHardware();
// The table-driven computation, always (tests compare the two).
uint32_t Crc32cSoftwareForTest(absl::string_view data);

}  // namespace farm

#endif  // FARM_BASE_CRC32C_H_
