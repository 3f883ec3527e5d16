// Message ids and wire formats of the node layer (kNodeMsgIds, farm/msg/message_ids.h).
//
// Every payload starts with a one-byte format tag (kNodeWireFormat); a decoder refuses
// another tag, a short payload and trailing bytes.
#ifndef FARM_NODE_NODE_MESSAGES_H_
#define FARM_NODE_NODE_MESSAGES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/base/address.h"
#include "farm/msg/message_ids.h"

namespace farm::node {

inline constexpr uint8_t kNodeWireFormat = 1;

// To a region's primary, from a backup whose copy's source left the configuration
// (region_rescue.cc): does it hold the region, and if not, is the asker the one to hand
// its copy over?
//   request  u8 tag | u32 region | u64 epoch   (the asker's configuration)
//   answer   u8 tag | u8 HolderAnswer | u64 epoch   (the answerer's)
inline constexpr MsgId kRegionHolderMsgId = kNodeMsgIds[0];

enum class HolderAnswer : uint8_t {
  kHolds = 1,          // it serves the region (adopted it): nothing to do
  kHandItOver = 2,     // it holds none: the asker sends its copy as a handover
  kOtherHandsOver = 3, // it holds none, and another backup was told to send its copy
  kNotPrimary = 4,     // not the region's primary in its configuration
  kRetry = 5,          // its configuration is not the asker's yet, or a copy is arriving
  kPromotesItsCopy = 6,  // it holds a whole copy it has not adopted yet: ask again
};

struct HolderQuery {
  RegionId region = kNullRegion;
  uint64_t epoch = 0;
};

struct HolderReply {
  HolderAnswer answer = HolderAnswer::kRetry;
  uint64_t epoch = 0;
};

std::string EncodeHolderQuery(const HolderQuery& query);
// InvalidArgument for another tag or size.
absl::StatusOr<HolderQuery> DecodeHolderQuery(absl::string_view bytes);
std::string EncodeHolderReply(const HolderReply& reply);
// InvalidArgument for another tag or size, or an answer outside HolderAnswer.
absl::StatusOr<HolderReply> DecodeHolderReply(absl::string_view bytes);
const char* HolderAnswerName(HolderAnswer answer);

}  // namespace farm::node

#endif  // FARM_NODE_NODE_MESSAGES_H_
