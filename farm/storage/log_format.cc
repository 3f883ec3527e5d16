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

// The whole record at the start of `rest`, checksum and all: its total size, or 0.
// Adds the bytes it checksums to `*checked`.
uint64_t WholeRecordAt(absl::string_view rest, uint64_t* checked) {
  if (rest.size() < kRecordHeaderBytes) return 0;
  const uint32_t length = LoadLe<uint32_t>(rest.data());
  if (length > kMaxRecordBytes || kRecordHeaderBytes + uint64_t{length} > rest.size()) return 0;
  *checked += length;
  const uint8_t type = static_cast<uint8_t>(rest[8]);
  if (RecordCrc(type, rest.substr(kRecordHeaderBytes, length)) != LoadLe<uint32_t>(rest.data() + 4)) return 0;
  return kRecordHeaderBytes + length;
}

// What follows a record that is not whole. A crash leaves at most a torn tail: what it
// cut short, then nothing whole. A whole record after a bad one means the bad one was
// written before it, so it is corruption, whatever its length field says (the checksum
// does not cover it).
struct AfterBad {
  enum class Kind { kNothingWhole, kWholeRecord, kUndecided } kind;
  size_t offset = 0;  // kWholeRecord: where it starts
};

// Looks at every later offset; checksumming is bounded (bytes that happen to look like
// many long records could otherwise take hours): past the bound it is undecided.
AfterBad LookAfterBad(absl::string_view file, size_t bad) {
  const uint64_t budget = 64 * uint64_t{file.size() - bad} + (uint64_t{256} << 20);
  uint64_t checked = 0;
  for (size_t at = bad + 1; at + kRecordHeaderBytes <= file.size(); ++at) {
    if (WholeRecordAt(file.substr(at), &checked) != 0) return {AfterBad::Kind::kWholeRecord, at};
    if (checked > budget) return {AfterBad::Kind::kUndecided, at};
  }
  return {AfterBad::Kind::kNothingWhole};
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
    uint64_t checked = 0;
    const uint64_t whole = WholeRecordAt(rest, &checked);
    if (whole == 0) {
      // Cut short, oversized or failing its checksum: the torn tail if nothing whole
      // follows (bytes a crash left half-written, or zeros past them), else corruption.
      const AfterBad after = LookAfterBad(file, at);
      if (after.kind == AfterBad::Kind::kWholeRecord) {
        return absl::DataLossError(absl::StrFormat(
            "%s: corrupt record at offset %d (bad length or checksum; a whole record follows at offset %d): "
            "recovery stops here",
            path, at, after.offset));
      }
      if (after.kind == AfterBad::Kind::kUndecided) {
        return absl::DataLossError(absl::StrFormat(
            "%s: a record at offset %d is not whole, and the %d bytes after it could not be ruled out as "
            "records (checked up to offset %d): recovery stops here",
            path, at, file.size() - at, after.offset));
      }
      break;
    }
    const absl::string_view payload = rest.substr(kRecordHeaderBytes, whole - kRecordHeaderBytes);
    log.records.push_back(LogRecordView{static_cast<uint8_t>(rest[8]), payload, at, path});
    at += whole;
  }
  log.valid_bytes = at;
  log.torn = at < file.size();
  return log;
}

}  // namespace farm::storage
