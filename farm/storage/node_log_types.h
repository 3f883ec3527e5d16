// The record types of a node's durable log (one place for them): what each carries and
// which layer writes and replays it. Payload encodings live with their writers
// (alloc/durable_records.h, tx/log_record.h).
//
//   kBoot           a start of the node on this directory: u8 format, u32 boot number
//                   (transaction ids of one boot never repeat those of another)
//   kRegionCreated  a region copy this node holds from now on (primary or backup)
//   kBlockWords     block-table words applied to a held region
//   kTxPrepared     a lock record received in PREPARE (tx/log_record.h encoding): the
//                   entries of regions held here; applied at replay only when a commit
//                   decision for it follows
//   kTxCommitted    u64 transaction id: the commit decision (as backup or primary) for
//                   the preceding kTxPrepared or kTxApplied of that transaction
//   kTxAborted      u64 transaction id: its preceding record is never applied
//   kTxApplied      a commit with its entries (single-machine commits: the primary's
//                   own and its backups'): applied at replay unless aborted after it
//   kTxReplicated   a backup's copy of a single-machine commit: the primary's whole
//                   kTxApplyMsgId request (tx/tx_messages.h: sender node, thread and
//                   boot, sequence number, watermark, then the commit record), applied
//                   at replay like kTxApplied; the records no watermark passed are what
//                   a restart reconciles with the other replicas (tx/recovery.h)
//   kMetadata       a service's small named value on this node (u8 format, u16 name
//                   bytes, name, u32 value bytes, value): the last one of a name wins
//   kRegionReset    a full copy of a region begins arriving from its primary (alloc's
//                   region copy protocol; the payload of kRegionCreated): replay creates
//                   the copy, or zeroes and formats the one held, and records that
//                   primary; the kRegionImage records after it fill it in
//   kRegionPromoted this node took its backup copy of a region over as its primary
//                   (failover; the payload of kRegionCreated, naming this node): replay
//                   records it as the copy's primary, so a restart serves the region
//   kRegionDropped  this node holds the region no more (the payload of kRegionCreated):
//                   it handed the region over to a new primary, or left its replica
//                   set; replay drops the copy
//   kRegionCopied   a region copy begun by the kRegionReset before it arrived whole: its END
//                   matched and every kRegionImage of it was durable first (the payload
//                   of kRegionCreated). A copy reset and neither copied nor promoted
//                   after it is partial at replay: never promoted (copy_receiver.h).
//                   Both records carry the receiver's number for the copy, and a
//                   kRegionCopied ends only the copy its sender and number name: the
//                   end of an earlier copy can be logged after the next copy's reset
//   kRegionCopiesDue the members that must still receive a copy of a region this node is
//                   the primary of (alloc/durable_records.h): replay restores the list,
//                   and the region stays frozen until they have it (farm/node failover)
//   kRegionImage    bytes of a region copy created by a kRegionCreated or kRegionReset
//                   before it (u8 format, u32 region, u64 offset, bytes): written over
//                   the copy. In a checkpoint, its regions' contents; in the log, one
//                   chunk of a region copy received (alloc/durable_records.h)
//
// Checkpoints only (a checkpoint is a file of this format too: farm/node/checkpointer.h):
//   kTxOutcomes     committed transactions whose prepare records were compacted away
//                   (u8 format, u32 count, count x (u64 id, u64 epoch)): what recovery
//                   answers other members about them
//   kCheckpointEnd  the last record of a complete checkpoint (u8 format, u64 the log
//                   segment replay continues with, u64 records before this one)
#ifndef FARM_STORAGE_NODE_LOG_TYPES_H_
#define FARM_STORAGE_NODE_LOG_TYPES_H_

#include <cstdint>

namespace farm::storage {

enum class NodeLogType : uint8_t {
  kBoot = 1,
  kRegionCreated = 2,
  kBlockWords = 3,
  kTxPrepared = 4,
  kTxCommitted = 5,
  kTxAborted = 6,
  kTxApplied = 7,
  kMetadata = 8,
  kRegionImage = 9,
  kTxOutcomes = 10,
  kCheckpointEnd = 11,
  kRegionReset = 12,
  kRegionPromoted = 13,
  kRegionDropped = 14,
  kRegionCopied = 15,
  kRegionCopiesDue = 16,
  kTxReplicated = 17,
};

constexpr uint8_t TypeByte(NodeLogType t) { return static_cast<uint8_t>(t); }

}  // namespace farm::storage

#endif  // FARM_STORAGE_NODE_LOG_TYPES_H_
