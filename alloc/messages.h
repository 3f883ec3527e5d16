// Message ids of the allocation layer (kAllocMsgIds, farm/msg/message_ids.h).
//
// Every payload starts with a one-byte format tag (kAllocWireFormat); a receiver refuses
// another tag, and checks sizes before it reads.
#ifndef FARM_ALLOC_MESSAGES_H_
#define FARM_ALLOC_MESSAGES_H_

#include "farm/msg/message.h"

namespace farm::alloc {

inline constexpr uint8_t kAllocWireFormat = 1;

// End-of-epoch request (paper section 4.4): answered once every operation that started
// on the receiving machine before the request arrived has ended. Empty body.
inline constexpr MsgId kEndOfEpochMsgId = kAllocMsgIds[1];
// Allocate near a hint whose region this node is primary of; answers a FatPtr.
inline constexpr MsgId kRemoteAllocMsgId = kAllocMsgIds[2];
// Free an object of a region this node is primary of.
inline constexpr MsgId kRemoteFreeMsgId = kAllocMsgIds[3];
// To a backup: hold a copy of a new region.
inline constexpr MsgId kBackupRegionMsgId = kAllocMsgIds[4];
// To a backup: a block-table entry changed.
inline constexpr MsgId kBlockStateMsgId = kAllocMsgIds[5];
// To a region's primary: the capability for one-sided access to the region.
inline constexpr MsgId kRegionCapabilityMsgId = kAllocMsgIds[6];

// The region copy protocol (region_copy.h): a region's primary gives a node a full copy
// of it. Every request answers the tag alone, or an error.
//   BEGIN  u8 tag | u32 region | u64 bytes: hold an empty copy of the region from the
//          sender (created, or the one held zeroed)
//   DATA   u8 tag | u32 region | u64 offset | bytes: write them into the copy (the
//          payload is the kRegionImage record: durable_records.h)
//   END    u8 tag | u32 region | u64 bytes sent | u32 CRC-32C of them: check the copy
inline constexpr MsgId kRegionCopyBeginMsgId = kAllocMsgIds[7];
inline constexpr MsgId kRegionCopyDataMsgId = kAllocMsgIds[8];
inline constexpr MsgId kRegionCopyEndMsgId = kAllocMsgIds[9];

}  // namespace farm::alloc

#endif  // FARM_ALLOC_MESSAGES_H_
