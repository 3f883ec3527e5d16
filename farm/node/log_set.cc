#include "farm/node/log_set.h"

#include "absl/strings/str_format.h"
#include "farm/storage/node_log_types.h"
#include "tx/recovery.h"

namespace farm::node {
namespace {

// Reads and parses `path` into `set`; returns the parse (views into set->bytes).
absl::StatusOr<storage::ParsedLog> ReadOne(storage::FileSystem* fs, const std::string& path,
                                           uint64_t identity, LogSet* set) {
  absl::StatusOr<std::string> bytes = fs->ReadFile(path);
  if (!bytes.ok() && !absl::IsNotFound(bytes.status())) return bytes.status();
  set->paths.push_back(path);
  set->bytes.push_back(bytes.ok() ? std::move(*bytes) : std::string());
  set->file_bytes += set->bytes.back().size();
  return storage::ParseLog(set->bytes.back(), identity, set->paths.back());
}

}  // namespace

absl::StatusOr<LogSet> ReadLogSet(storage::FileSystem* fs, const std::string& dir,
                                  uint64_t identity, std::optional<uint64_t> checkpoint,
                                  const std::vector<uint64_t>& segments) {
  LogSet set;
  if (checkpoint.has_value()) {
    const std::string path = storage::CheckpointPath(dir, *checkpoint);
    absl::StatusOr<storage::ParsedLog> parsed = ReadOne(fs, path, identity, &set);
    if (!parsed.ok()) return parsed.status();
    if (parsed->torn || parsed->records.empty() ||
        parsed->records.back().type != storage::TypeByte(storage::NodeLogType::kCheckpointEnd)) {
      return absl::DataLossError(absl::StrFormat("%s is incomplete (no end record%s)", path,
                                                 parsed->torn ? ", a torn tail" : ""));
    }
    absl::StatusOr<tx::CheckpointEnd> end = tx::DecodeCheckpointEnd(parsed->records.back().payload);
    if (!end.ok()) return absl::DataLossError(absl::StrCat(path, ": ", end.status().message()));
    if (end->next_segment != *checkpoint || end->records + 1 != parsed->records.size()) {
      return absl::DataLossError(absl::StrFormat(
          "%s ends as the checkpoint before segment %d with %d records, but holds %d records", path,
          end->next_segment, end->records, parsed->records.size() - 1));
    }
    set.records = std::move(parsed->records);
    set.checkpoint_records = set.records.size();
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string path = storage::SegmentPath(dir, segments[i]);
    absl::StatusOr<storage::ParsedLog> parsed = ReadOne(fs, path, identity, &set);
    if (!parsed.ok()) return parsed.status();
    const bool last = i + 1 == segments.size();
    if (parsed->torn && !last) {
      return absl::DataLossError(
          absl::StrFormat("%s: a torn tail at offset %d, but later segments follow (a closed "
                          "segment is always whole)",
                          path, parsed->valid_bytes));
    }
    set.records.insert(set.records.end(), parsed->records.begin(), parsed->records.end());
    if (last) {
      set.last_path = path;
      set.last_valid_bytes = parsed->valid_bytes;
      set.torn = parsed->torn;
    }
  }
  return set;
}

}  // namespace farm::node
