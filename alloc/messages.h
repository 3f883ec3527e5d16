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

}  // namespace farm::alloc

#endif  // FARM_ALLOC_MESSAGES_H_
