// The files of a node's log in its data directory, and which of them a start reads.
//
//   log, log.1, log.2, ...   segments, in order (segment 0 is "log"): the writer appends
//                            to the newest; older ones are closed and whole
//   checkpoint.N             a complete checkpoint (farm/node/checkpointer.h): the state
//                            every segment before N leaves; replay goes on with
//                            segment N
//   *.tmp                    a checkpoint being written (or one a crash cut short)
//
// Recovery reads the newest checkpoint and the segments from its N on; a checkpoint is
// renamed into place only when complete, and older files are removed only after that,
// so a crash at any point leaves a readable set (ListLogFiles names what is stale).
#ifndef FARM_STORAGE_LOG_FILES_H_
#define FARM_STORAGE_LOG_FILES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/storage/file_system.h"

namespace farm::storage {

std::string SegmentPath(const std::string& dir, uint64_t segment);
std::string CheckpointPath(const std::string& dir, uint64_t next_segment);

struct LogFiles {
  std::optional<uint64_t> checkpoint;  // N of the newest checkpoint.N
  std::vector<uint64_t> segments;      // to read, ascending and contiguous (at least one)
  std::vector<std::string> stale;      // paths left behind: older segments and checkpoints, *.tmp
};

// What is in `dir`. DataLoss when the set cannot be read whole: a gap between segments,
// or segments that start after 0 with no checkpoint to start from.
absl::StatusOr<LogFiles> ListLogFiles(FileSystem* fs, const std::string& dir);

}  // namespace farm::storage

#endif  // FARM_STORAGE_LOG_FILES_H_
