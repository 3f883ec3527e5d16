#include "farm/storage/log_files.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace farm::storage {

std::string SegmentPath(const std::string& dir, uint64_t segment) {
  return segment == 0 ? absl::StrCat(dir, "/log") : absl::StrCat(dir, "/log.", segment);
}

std::string CheckpointPath(const std::string& dir, uint64_t next_segment) {
  return absl::StrCat(dir, "/checkpoint.", next_segment);
}

absl::StatusOr<LogFiles> ListLogFiles(FileSystem* fs, const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> names = fs->List(dir);
  if (!names.ok()) return names.status();
  std::vector<uint64_t> segments, checkpoints;
  LogFiles files;
  for (const std::string& name : *names) {
    absl::string_view n = name;
    uint64_t number = 0;
    if (absl::EndsWith(n, ".tmp")) {
      files.stale.push_back(absl::StrCat(dir, "/", name));
    } else if (n == "log") {
      segments.push_back(0);
    } else if (absl::ConsumePrefix(&n, "log.") && absl::SimpleAtoi(n, &number) && number > 0) {
      segments.push_back(number);
    } else if (absl::ConsumePrefix(&n, "checkpoint.") && absl::SimpleAtoi(n, &number)) {
      checkpoints.push_back(number);
    }
  }
  std::sort(segments.begin(), segments.end());
  std::sort(checkpoints.begin(), checkpoints.end());
  if (!checkpoints.empty()) {
    files.checkpoint = checkpoints.back();
    for (size_t i = 0; i + 1 < checkpoints.size(); ++i)
      files.stale.push_back(CheckpointPath(dir, checkpoints[i]));
  }
  const uint64_t first = files.checkpoint.value_or(0);
  for (uint64_t s : segments) {
    if (s < first) {
      files.stale.push_back(SegmentPath(dir, s));
    } else {
      files.segments.push_back(s);
    }
  }
  if (files.segments.empty()) {
    // A new directory: the writer creates the first segment (empty until then).
    files.segments.push_back(first);
  }
  if (files.segments.front() != first) {
    return absl::DataLossError(
        absl::StrFormat("%s: the log starts at %s but replay must start at %s (%s)", dir,
                        SegmentPath(dir, files.segments.front()), SegmentPath(dir, first),
                        files.checkpoint ? "the checkpoint's next segment" : "no checkpoint"));
  }
  for (size_t i = 1; i < files.segments.size(); ++i) {
    if (files.segments[i] != files.segments[i - 1] + 1) {
      return absl::DataLossError(absl::StrFormat("%s: log segment %s is missing", dir,
                                                 SegmentPath(dir, files.segments[i - 1] + 1)));
    }
  }
  return files;
}

}  // namespace farm::storage
