// The payloads of the region copy protocol's BEGIN and END requests (messages.h; DATA's
// is the kRegionImage record of durable_records.h). Decoders check the tag and the exact
// size before they read: nullopt for anything else.
#ifndef FARM_ALLOC_COPY_MESSAGES_H_
#define FARM_ALLOC_COPY_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "farm/base/address.h"

namespace farm::alloc {

struct CopyBegin {
  RegionId region = 0;
  uint64_t bytes = 0;  // the region's size
};
std::string EncodeCopyBegin(const CopyBegin& m);
std::optional<CopyBegin> DecodeCopyBegin(absl::string_view payload);

struct CopyEnd {
  RegionId region = 0;
  uint64_t bytes_sent = 0;  // DATA bytes since BEGIN
  uint32_t crc = 0;         // CRC-32C of those bytes, in offset order (farm/base/crc32c.h)
};
std::string EncodeCopyEnd(const CopyEnd& m);
std::optional<CopyEnd> DecodeCopyEnd(absl::string_view payload);

}  // namespace farm::alloc

#endif  // FARM_ALLOC_COPY_MESSAGES_H_
