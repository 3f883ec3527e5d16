#include "tx/log_record.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "farm/base/crc32c.h"

namespace farm::tx {
namespace {

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
T Get(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

bool KnownKind(uint8_t k) { return k >= 1 && k <= static_cast<uint8_t>(LogKind::kValidate); }
bool KnownOp(uint8_t o) { return o >= 1 && o <= static_cast<uint8_t>(LogOp::kWriteNewIncarnation); }

}  // namespace

absl::Status EncodeLogRecord(const LogRecord& record, std::string* out) {
  if (record.entries.size() > kMaxLogEntries) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a log record holds at most %d entries, not %d", kMaxLogEntries, record.entries.size()));
  }
  uint64_t total = kLogHeaderBytes;
  for (const LogEntry& e : record.entries) total += kLogEntryHeaderBytes + e.payload.size();
  if (total > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrFormat("a log record of %d bytes is too large", total));
  }
  const size_t start = out->size();
  Put<uint8_t>(out, kLogFormat);
  Put<uint8_t>(out, static_cast<uint8_t>(record.kind));
  Put<uint16_t>(out, static_cast<uint16_t>(record.entries.size()));
  Put<uint32_t>(out, static_cast<uint32_t>(total));
  Put<uint64_t>(out, record.transaction);
  Put<uint64_t>(out, record.epoch);
  Put<uint32_t>(out, 0);  // checksum, filled in below
  Put<uint32_t>(out, 0);
  for (const LogEntry& e : record.entries) {
    Put<uint64_t>(out, e.address.raw());
    Put<uint64_t>(out, e.version);
    Put<uint32_t>(out, e.incarnation);
    Put<uint32_t>(out, static_cast<uint32_t>(e.payload.size()));
    Put<uint8_t>(out, static_cast<uint8_t>(e.op));
    out->append(3, '\0');
    Put<uint32_t>(out, e.size);
    out->append(e.payload);
  }
  const uint32_t crc =
      Crc32c(absl::string_view(out->data() + start + kLogHeaderBytes, total - kLogHeaderBytes));
  std::memcpy(out->data() + start + 24, &crc, sizeof(crc));
  return absl::OkStatus();
}

absl::StatusOr<LogRecord> DecodeLogRecord(std::string_view in, size_t* consumed) {
  if (in.size() < kLogHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a log record needs a %d-byte header; %d bytes given", kLogHeaderBytes, in.size()));
  }
  const char* h = in.data();
  if (Get<uint8_t>(h) != kLogFormat) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "log record format %d; this build reads %d", Get<uint8_t>(h), kLogFormat));
  }
  if (!KnownKind(Get<uint8_t>(h + 1))) {
    return absl::InvalidArgumentError(absl::StrFormat("unknown log record kind %d", Get<uint8_t>(h + 1)));
  }
  const uint16_t count = Get<uint16_t>(h + 2);
  const uint32_t total = Get<uint32_t>(h + 4);
  if (total < kLogHeaderBytes || total > in.size()) {
    return absl::DataLossError(absl::StrFormat(
        "log record claims %d bytes; %d available", total, in.size()));
  }
  if (Crc32c(absl::string_view(h + kLogHeaderBytes, total - kLogHeaderBytes)) != Get<uint32_t>(h + 24)) {
    return absl::DataLossError("log record checksum mismatch");
  }
  LogRecord record;
  record.kind = static_cast<LogKind>(Get<uint8_t>(h + 1));
  record.transaction = Get<uint64_t>(h + 8);
  record.epoch = Get<uint64_t>(h + 16);
  record.entries.reserve(count);
  size_t at = kLogHeaderBytes;
  for (uint16_t i = 0; i < count; ++i) {
    if (total - at < kLogEntryHeaderBytes) {
      return absl::DataLossError(absl::StrFormat("log entry %d of %d runs past the record", i, count));
    }
    const char* e = h + at;
    LogEntry entry;
    entry.address = Addr::FromRaw(Get<uint64_t>(e));
    entry.version = Get<uint64_t>(e + 8);
    entry.incarnation = Get<uint32_t>(e + 16);
    const uint32_t n = Get<uint32_t>(e + 20);
    if (!KnownOp(Get<uint8_t>(e + 24))) {
      return absl::InvalidArgumentError(absl::StrFormat("log entry %d has unknown op %d", i, Get<uint8_t>(e + 24)));
    }
    entry.op = static_cast<LogOp>(Get<uint8_t>(e + 24));
    entry.size = Get<uint32_t>(e + 28);
    at += kLogEntryHeaderBytes;
    if (total - at < n) {
      return absl::DataLossError(absl::StrFormat("log entry %d's %d payload bytes run past the record", i, n));
    }
    entry.payload.assign(h + at, n);
    at += n;
    record.entries.push_back(std::move(entry));
  }
  if (at != total) {
    return absl::DataLossError(absl::StrFormat("log record has %d bytes after its %d entries", total - at, count));
  }
  if (consumed != nullptr) *consumed = total;
  return record;
}

}  // namespace farm::tx
