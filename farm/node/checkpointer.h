// Checkpoints of a node's log: what keeps the log's disk use bounded (paper section 3.4:
// "log cleaning is invoked when the log is half full").
//
// A checkpoint is built from closed files only — the previous checkpoint and the
// segments after it up to the one the writer just rotated away from — by replaying them
// into scratch copies (tx/recovery.h, ReplayMode::kCompact) and writing what that leaves
// as a file of the log's own format (storage/log_format.h, storage/node_log_types.h):
//
//   kBoot, kMetadata...          the last start number and every service value
//   per region held (by id):     kRegionCreated (kRegionReset for a partial copy, which
//                                stays partial), then kRegionImage records of its
//                                non-zero bytes (1 MiB at most each), and the copies of
//                                it still due to backups (kRegionCopiesDue) if any
//   carried records              transaction records still undecided at the end of the
//                                prefix, as logged (their decisions are in later segments)
//   kTxOutcomes...               committed distributed transactions (other members may
//                                still ask about them after a crash: tx_service.h)
//   kCheckpointEnd               the segment replay continues with, and the record count
//
// written under a temporary name, synced and renamed into place (whole or absent), so
// that replaying checkpoint.N and then segments N, N+1, ... leaves exactly what
// replaying every segment from the start would. The live regions are never read: the
// image is the log's own prefix, consistent by construction, so transactions go on
// undisturbed (the cost is the replay's CPU, at low priority, and the scratch copies'
// memory while it runs).
//
// Kept until failover's recovery can bound it (issue 17): the committed-transaction list
// (16 bytes per distributed commit this node took part in).
#ifndef FARM_NODE_CHECKPOINTER_H_
#define FARM_NODE_CHECKPOINTER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/base/address.h"
#include "farm/base/region.h"
#include "farm/storage/file_system.h"

namespace farm::node {

struct CheckpointRequest {
  storage::FileSystem* fs = nullptr;
  std::string dir;
  uint64_t identity = 0;
  NodeId self = 0;
  std::optional<uint64_t> previous;         // checkpoint.N to start from (none: from segment 0)
  std::vector<uint64_t> segments;           // closed segments after it, ascending, contiguous
  RegionOptions region_options;             // the scratch copies'
  const std::atomic<bool>* stop = nullptr;  // set: give up (Cancelled), nothing written
};

struct CheckpointStats {
  uint64_t next_segment = 0;  // the checkpoint is checkpoint.<next_segment>
  uint64_t bytes = 0;         // of the checkpoint file
  uint64_t input_bytes = 0;   // of the files it replaces
  uint64_t regions = 0;
  uint64_t image_bytes = 0;
  uint64_t carried = 0;
  uint64_t outcomes = 0;
  double seconds = 0;
};

// Writes checkpoint.<segments.back() + 1>. The caller removes the replaced files after.
absl::StatusOr<CheckpointStats> BuildCheckpoint(const CheckpointRequest& request);

}  // namespace farm::node

#endif  // FARM_NODE_CHECKPOINTER_H_
