#include "farm/storage/log_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/crc32c.h"
#include "farm/base/wire.h"

namespace farm::storage {
namespace {

constexpr char kMagic[8] = {'F', 'a', 'R', 'M', 'l', 'o', 'g', '\0'};

uint32_t RecordCrc(uint8_t type, absl::string_view payload) {
  return Crc32cExtend(Crc32c(absl::string_view(reinterpret_cast<const char*>(&type), 1)), payload);
}

}  // namespace

std::string EncodeLogHeader(uint64_t identity) {
  std::string out(kMagic, sizeof(kMagic));
  WireWriter w(&out);
  w.Put<uint32_t>(kLogFormat).Put<uint32_t>(0).Put<uint64_t>(identity);
  w.Put<uint32_t>(Crc32c(out)).Put<uint32_t>(0);
  return out;
}

void EncodeRecord(uint8_t type, absl::string_view payload, std::string* out) {
  WireWriter(out)
      .Put<uint32_t>(static_cast<uint32_t>(payload.size()))
      .Put<uint32_t>(RecordCrc(type, payload))
      .Put<uint8_t>(type)
      .Bytes(payload);
}

absl::StatusOr<ParsedLog> ParseLog(absl::string_view file, uint64_t identity, absl::string_view path) {
  ParsedLog log;
  if (file.size() < kLogHeaderBytes) {
    log.torn = !file.empty();
    return log;
  }
  if (file.substr(0, sizeof(kMagic)) != absl::string_view(kMagic, sizeof(kMagic))) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a FaRM log (bad magic)"));
  }
  const uint32_t format = LoadLe<uint32_t>(file.data() + 8);
  const uint64_t owner = LoadLe<uint64_t>(file.data() + 16);
  const uint32_t crc = LoadLe<uint32_t>(file.data() + 24);
  if (crc != Crc32c(file.substr(0, 24))) {
    return absl::DataLossError(absl::StrCat(path, ": the log header fails its checksum"));
  }
  if (format != kLogFormat) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: log format %d, this build reads format %d", path, format, kLogFormat));
  }
  if (owner != identity) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s belongs to another cluster or node (identity %016x, expected %016x)", path, owner, identity));
  }
  uint64_t at = kLogHeaderBytes;
  while (at < file.size()) {
    const absl::string_view rest = file.substr(at);
    if (rest.size() < kRecordHeaderBytes) break;  // torn header
    const uint32_t length = LoadLe<uint32_t>(rest.data());
    const uint32_t record_crc = LoadLe<uint32_t>(rest.data() + 4);
    const uint8_t type = static_cast<uint8_t>(rest[8]);
    if (length > kMaxRecordBytes || kRecordHeaderBytes + uint64_t{length} > rest.size()) break;  // torn
    const absl::string_view payload = rest.substr(kRecordHeaderBytes, length);
    if (RecordCrc(type, payload) != record_crc) {
      if (at + kRecordHeaderBytes + length == file.size()) break;  // the last write, torn
      return absl::DataLossError(absl::StrFormat(
          "%s: corrupt record at offset %d (checksum mismatch, %d bytes follow it): recovery stops here",
          path, at, file.size() - at - kRecordHeaderBytes - length));
    }
    log.records.push_back(LogRecordView{type, payload, at, path});
    at += kRecordHeaderBytes + length;
  }
  log.valid_bytes = at;
  log.torn = at < file.size();
  return log;
}

}  // namespace farm::storage
