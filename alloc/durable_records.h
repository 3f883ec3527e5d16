// The allocation layer's records in the node's durable log (storage/node_log_types.h):
// a region copy this node holds, block-table words applied to it, and copies received
// whole from a primary (region_copy.h). The same records serve the primary's own copy
// and its backups', so replay (tx/recovery.h) rebuilds every held region the way
// backups build theirs (BackupRegions).
//
//   kRegionCreated  u8 format (kAllocWireFormat) | u32 region | u64 bytes | u32 primary
//                   [| u64 copy: in kRegionReset and kRegionCopied, the receiver's
//                   number for the copy (RegionCopyReceiver::Begin), so that a copy's
//                   end is told from another's of the same sender; absent (0) in logs
//                   written before 2026-12-02, and in the other records]
//   kBlockWords     u8 format | u32 region | u32 first unit | u32 count | count × u64
//                   (the payload of a kBlockStateMsgId request, logged as received)
//   kRegionReset    the payload of kRegionCreated: a copy received from `primary`
//                   (region_copy.h) starts here, empty
//   kRegionImage    u8 format | u32 region | u64 offset | bytes: written over the copy
//                   (a checkpoint's images, and the payload of a kRegionCopyDataMsgId
//                   request, logged as received)
//   kRegionCopiesDue u8 format | u32 region | u32 count | count × u32 node: the members
//                   that must still receive a copy of a region this node is the primary
//                   of (failover's re-replication); the last one of a region wins, and
//                   an empty list says none is due any more
#ifndef FARM_ALLOC_DURABLE_RECORDS_H_
#define FARM_ALLOC_DURABLE_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/base/address.h"

namespace farm::alloc {

struct RegionCreated {
  RegionId region = 0;
  uint64_t bytes = 0;
  NodeId primary = 0;
  uint64_t copy = 0;  // encoded only when not 0
};
std::string EncodeRegionCreated(const RegionCreated& r);
absl::StatusOr<RegionCreated> DecodeRegionCreated(absl::string_view payload);

struct BlockWords {
  RegionId region = 0;
  uint32_t first_unit = 0;
  std::vector<uint64_t> words;
};
std::string EncodeBlockWords(RegionId region, uint32_t first_unit, const uint64_t* words, size_t count);
absl::StatusOr<BlockWords> DecodeBlockWords(absl::string_view payload);

// Bytes of a region copy at an offset. `bytes` points into the decoded payload.
struct RegionImage {
  RegionId region = 0;
  uint64_t offset = 0;
  absl::string_view bytes;
};
inline constexpr size_t kRegionImageHeaderBytes = 1 + 4 + 8;
std::string EncodeRegionImage(RegionId region, uint64_t offset, absl::string_view bytes);
// DataLoss for a payload too short for the header or of another format; the bytes may
// be empty.
absl::StatusOr<RegionImage> DecodeRegionImage(absl::string_view payload);

struct CopiesDue {
  RegionId region = 0;
  std::vector<NodeId> nodes;
};
// At most kMaxCopiesDue nodes (a replica set's backups).
inline constexpr uint32_t kMaxCopiesDue = 64;
std::string EncodeCopiesDue(RegionId region, const std::vector<NodeId>& nodes);
absl::StatusOr<CopiesDue> DecodeCopiesDue(absl::string_view payload);

}  // namespace farm::alloc

#endif  // FARM_ALLOC_DURABLE_RECORDS_H_
