// LogSet: the records one replay reads — the newest checkpoint's, then the segments'
// after it (storage/log_files.h), in log order — with the files' bytes kept alive for
// the views into them.
//
// Checks, naming the file: a checkpoint must be whole (ParseLog finds no torn tail, its
// last record is kCheckpointEnd naming the segment it is followed by, and counting the
// records before it); only the last segment may end in a torn tail (a rotation syncs a
// segment before starting the next), which `torn` reports for the writer to cut off.
#ifndef FARM_NODE_LOG_SET_H_
#define FARM_NODE_LOG_SET_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/storage/file_system.h"
#include "farm/storage/log_files.h"
#include "farm/storage/log_format.h"

namespace farm::node {

struct LogSet {
  std::deque<std::string> paths;  // deques: the views keep pointing at them
  std::deque<std::string> bytes;
  std::vector<storage::LogRecordView> records;
  uint64_t checkpoint_records = 0;  // the first records, from the checkpoint
  uint64_t file_bytes = 0;          // of every file read
  // The last segment read: where appending goes on.
  std::string last_path;
  uint64_t last_valid_bytes = 0;
  bool torn = false;
};

// Reads checkpoint.`checkpoint` (if any) and `segments` of `dir`; `identity` must match
// every file's header. A segment that does not exist reads as empty.
absl::StatusOr<LogSet> ReadLogSet(storage::FileSystem* fs, const std::string& dir,
                                  uint64_t identity, std::optional<uint64_t> checkpoint,
                                  const std::vector<uint64_t>& segments);

}  // namespace farm::node

#endif  // FARM_NODE_LOG_SET_H_
