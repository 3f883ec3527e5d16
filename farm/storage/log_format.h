// The durable log's file format: a header, then records, each versioned by the file's
// format, length-prefixed and CRC-32C-checked. One place for the encoding; the writer
// (log_writer.h) appends, ParseLog reads back.
//
//   header (32 bytes)  "FaRMlog\0" | format u32 (kLogFormat) | reserved u32 |
//                      identity u64 (whose log: cluster and node, log_writer.h) |
//                      crc32c u32 of the 24 bytes before | reserved u32
//   record             length u32 (payload bytes) | crc32c u32 of type and payload |
//                      type u8 | payload
//
// Reading (ParseLog), what a crash can leave and what it cannot. A crash leaves at most
// a torn tail: the last write cut short, then nothing whole (possibly zeros, where the
// file grew before its data reached the disk). So a record that is not whole — its
// header or payload runs past the end, its length is over kMaxRecordBytes, or its
// checksum fails — is:
//   - the torn tail when no whole record (length within the file, checksum matching)
//     starts anywhere after it: the records before it are the log, `torn` says so, and
//     the caller truncates the file there;
//   - corruption when one does (a damaged length field included, which the checksum
//     does not cover): DataLoss naming the file and both offsets — never skipped;
// The writer never writes a record over kMaxRecordBytes (it refuses the append).
//   - a header of another format version, or of another identity: FailedPrecondition;
//     not a log at all: InvalidArgument. A file shorter than its header is empty (torn
//     at 0): the header is the first thing written, and synced.
#ifndef FARM_STORAGE_LOG_FORMAT_H_
#define FARM_STORAGE_LOG_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm::storage {

inline constexpr uint32_t kLogFormat = 1;
inline constexpr size_t kLogHeaderBytes = 32;
inline constexpr size_t kRecordHeaderBytes = 9;
inline constexpr uint32_t kMaxRecordBytes = 64u << 20;

std::string EncodeLogHeader(uint64_t identity);
// Appends one record's bytes to `out`.
void EncodeRecord(uint8_t type, absl::string_view payload, std::string* out);

struct LogRecordView {
  uint8_t type = 0;
  absl::string_view payload;  // into the parsed bytes
  uint64_t offset = 0;        // of the record in the file
  absl::string_view file;     // the file's path (ParseLog's `path`: must outlive the view)
};

struct ParsedLog {
  std::vector<LogRecordView> records;
  uint64_t valid_bytes = 0;  // header and whole records: where appending goes on
  bool torn = false;         // bytes after valid_bytes were a torn tail
};

// Parses `file` (the whole file's bytes, which must outlive the views); `path` names it
// in errors. `identity` must match the header's.
absl::StatusOr<ParsedLog> ParseLog(absl::string_view file, uint64_t identity, absl::string_view path);

}  // namespace farm::storage

#endif  // FARM_STORAGE_LOG_FORMAT_H_
