// Replay of a node's durable log (storage/node_log_types.h) at restart: rebuilds every
// region copy the node held — its own regions and its backup copies alike, the way a
// backup builds its copies (BackupRegions) — and finds the transactions a crash left
// in doubt.
//
// What is applied: region creations and block-table words in log order; a kTxApplied
// record unless a kTxAborted of its transaction follows it (the primary of a
// single-machine commit logs its decision after it, before unlocking the objects); a kTxPrepared record only
// when a kTxCommitted of its transaction follows it. Entries are applied at their
// record's position: for one object, a transaction's record always comes after the
// decision of the transaction before it (the object stays locked at its primary from
// PREPARE until applied, and every replica logs the decision before the primary
// applies), so log order is the objects' commit order.
//
// In doubt: a kTxPrepared record with no decision after it. Its objects in this node's
// own regions are left locked (exclusive, as the crash left them) until recovery
// decides (the node asks the other members what they logged: tx_service.h).
//
// Checkpoints (ReplayMode::kCompact, farm/node/checkpointer.h) replay a closed prefix of
// the log into scratch copies the same way, except that a transaction record still
// undecided at the prefix's end is neither applied nor locked but carried (its decision
// may be in the segments after the prefix), and the committed distributed transactions
// are listed (other members may still ask about them). A checkpoint's own records
// (kRegionImage, kTxOutcomes, kCheckpointEnd) replay as the start of the log.
//
// A backup's kTxReplicated records (a single-machine commit with its sender's sequence
// number and watermark) apply like kTxApplied; those no watermark passed are listed in
// `retained` for the restart's reconciliation of replicas (and a checkpoint carries
// them), together with the node's own commits a crash left without their decision.
//
// Region copies received whole (alloc/region_copy.h) replay as kRegionReset, their
// kRegionImage chunks and kRegionCopied; one without its kRegionCopied (nor a later
// kRegionPromoted, which only a whole copy gets) is listed in partial_copies. The copies a
// primary still owes its backups (kRegionCopiesDue) are listed in copies_due.
//
// Errors: a record that passed its checksum but does not decode, or that names a
// region not held, is DataLoss naming the file and the record's offset — never skipped.
#ifndef FARM_TX_RECOVERY_H_
#define FARM_TX_RECOVERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "alloc/backup_regions.h"
#include "farm/storage/log_format.h"
#include "tx/log_record.h"
#include "tx/tx_messages.h"  // TxOutcome

namespace farm::tx {

struct InDoubt {
  LogRecord primary;  // entries of this node's own regions: locked in the copies
  LogRecord backup;   // entries of backup copies: kept until decided
  std::vector<NodeId> participants;  // every node that was sent its PREPARE
};

struct ReplayStats {
  uint64_t records = 0;
  uint64_t regions = 0;
  uint64_t block_updates = 0;
  uint64_t transactions_applied = 0;
  uint64_t transactions_discarded = 0;  // aborted, or prepared and never decided commit
};

enum class ReplayMode {
  kRestart,  // the whole log: in-doubt objects locked, ready to serve
  kCompact,  // a prefix, for a checkpoint: undecided records carried
};

struct ReplayResult {
  uint32_t boot = 0;  // the last start's number in the log (0: none)
  absl::flat_hash_map<std::string, std::string> metadata;  // kMetadata: the last of each name
  std::vector<InDoubt> in_doubt;
  absl::flat_hash_map<TxKey, TxOutcome> outcomes;  // every transaction the log names
  ReplayStats stats;
  // kRestart: this node's own single-machine commits that a crash left without their
  // decision record, applied (a failed one is reported only once its abort is durable):
  // the restarted node logs their commits, so no checkpoint has to carry them.
  std::vector<uint64_t> presumed_committed;
  // kRestart: the single-machine commit records (log_record.h encodings) that another
  // replica of their regions may lack, because the crash came while they were being
  // replicated: this node's own commits that have no decision record (above), and the
  // kTxReplicated records that no watermark of their sender passed (of its latest boot
  // in the log). The restarted primaries reconcile their regions' replicas with them
  // (farm/node, AdoptRecoveredRegions); failover gathers them like retained records.
  // In kCompact mode those kTxReplicated records are carried instead.
  std::vector<std::string> retained;
  // kCompact only: the undecided transaction records and the kTxReplicated records of
  // `retained`, in log order (views into the records replayed), and the committed
  // transactions that had prepare records.
  std::vector<storage::LogRecordView> carried;
  std::vector<TxKey> committed_prepared;
  // Region copies held whose last kRegionReset is followed by neither a kRegionCopied
  // nor a kRegionPromoted: a copy the node was receiving when it stopped. Their bytes
  // are not the region's; a checkpoint keeps them partial. Sorted.
  std::vector<RegionId> partial_copies;
  // The same copies, each with the number of its last kRegionReset (0 when it named
  // none), for a checkpoint to keep: the copy's kRegionCopied may come in a later segment.
  absl::flat_hash_map<RegionId, uint64_t> partial_copy_numbers;
  // This node's own regions (primary) with copies still due to members, as the last
  // kRegionCopiesDue of each left them (failover's re-replication the node stopped in).
  absl::flat_hash_map<RegionId, std::vector<NodeId>> copies_due;
};

// The payloads of the node's own records (node_log_types.h): kBoot and kMetadata.
std::string EncodeBoot(uint32_t boot);
inline constexpr size_t kMaxMetadataBytes = 64 << 10;
std::string EncodeMetadata(absl::string_view name, absl::string_view value);

// The payloads of a checkpoint's records (node_log_types.h).
std::string EncodeRegionImage(RegionId region, uint64_t offset, absl::string_view bytes);
std::string EncodeTxOutcomes(absl::Span<const TxKey> committed);
std::string EncodeCheckpointEnd(uint64_t next_segment, uint64_t records);
struct CheckpointEnd {
  uint64_t next_segment = 0;
  uint64_t records = 0;
};
absl::StatusOr<CheckpointEnd> DecodeCheckpointEnd(absl::string_view payload);

// Replays `records` (ParseLog's, in log order: a checkpoint's first, then the segments
// after it) into `copies`, which must hold nothing yet. `self` is this node: regions it
// created are its own (their in-doubt objects are locked under kRestart).
absl::StatusOr<ReplayResult> ReplayNodeLog(absl::Span<const storage::LogRecordView> records, NodeId self,
                                           ReplayMode mode, alloc::BackupRegions* copies);

}  // namespace farm::tx

#endif  // FARM_TX_RECOVERY_H_
