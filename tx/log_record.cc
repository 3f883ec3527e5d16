#include "tx/log_record.h"

#include "absl/strings/str_format.h"
#include "farm/base/crc32c.h"
#include "farm/base/wire.h"

namespace farm::tx {
namespace {

bool KnownKind(uint8_t k) { return k >= 1 && k <= static_cast<uint8_t>(LogKind::kValidateReadOnly); }
bool KnownOp(uint8_t o) { return o >= 1 && o <= static_cast<uint8_t>(LogOp::kFreeRaw); }

}  // namespace

absl::Status EncodeLogRecord(const LogRecord& record, std::string* out) {
  return EncodeLogRecordAs(record, record.kind, record.epoch, out);
}

absl::Status EncodeLogRecordAs(const LogRecord& record, LogKind kind, uint64_t epoch, std::string* out) {
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
  WireWriter w(out);
  w.Put<uint8_t>(kLogFormat);
  w.Put<uint8_t>(static_cast<uint8_t>(kind));
  w.Put<uint16_t>(static_cast<uint16_t>(record.entries.size()));
  w.Put<uint32_t>(static_cast<uint32_t>(total));
  w.Put<uint64_t>(record.transaction);
  w.Put<uint64_t>(epoch);
  w.Put<uint32_t>(0);  // checksum, filled in below
  w.Put<uint32_t>(0);
  for (const LogEntry& e : record.entries) {
    w.Put<uint64_t>(e.address.raw());
    w.Put<uint64_t>(e.version);
    w.Put<uint32_t>(e.incarnation);
    w.Put<uint32_t>(static_cast<uint32_t>(e.payload.size()));
    w.Put<uint8_t>(static_cast<uint8_t>(e.op));
    out->append(3, '\0');
    w.Put<uint32_t>(e.size);
    out->append(e.payload);
  }
  const uint32_t crc =
      Crc32c(absl::string_view(out->data() + start + kLogHeaderBytes, total - kLogHeaderBytes));
  StoreLe<uint32_t>(out->data() + start + 24, crc);
  return absl::OkStatus();
}

namespace {

// Decodes the record at the front of `in` into `header` (kind, transaction, epoch; its
// entries untouched) and calls add(LogEntryView) for each entry, in order, once every
// check before it passed. The record's length in `consumed`.
template <typename Record, typename AddEntry>
absl::Status DecodeRecord(std::string_view in, Record* header, AddEntry add, size_t* consumed) {
  if (in.size() < kLogHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a log record needs a %d-byte header; %d bytes given", kLogHeaderBytes, in.size()));
  }
  const char* h = in.data();
  if (LoadLe<uint8_t>(h) != kLogFormat) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "log record format %d; this build reads %d", LoadLe<uint8_t>(h), kLogFormat));
  }
  if (!KnownKind(LoadLe<uint8_t>(h + 1))) {
    return absl::InvalidArgumentError(absl::StrFormat("unknown log record kind %d", LoadLe<uint8_t>(h + 1)));
  }
  const uint16_t count = LoadLe<uint16_t>(h + 2);
  const uint32_t total = LoadLe<uint32_t>(h + 4);
  if (total < kLogHeaderBytes || total > in.size()) {
    return absl::DataLossError(absl::StrFormat(
        "log record claims %d bytes; %d available", total, in.size()));
  }
  if (Crc32c(absl::string_view(h + kLogHeaderBytes, total - kLogHeaderBytes)) != LoadLe<uint32_t>(h + 24)) {
    return absl::DataLossError("log record checksum mismatch");
  }
  header->kind = static_cast<LogKind>(LoadLe<uint8_t>(h + 1));
  header->transaction = LoadLe<uint64_t>(h + 8);
  header->epoch = LoadLe<uint64_t>(h + 16);
  header->entries.reserve(count);
  size_t at = kLogHeaderBytes;
  for (uint16_t i = 0; i < count; ++i) {
    if (total - at < kLogEntryHeaderBytes) {
      return absl::DataLossError(absl::StrFormat("log entry %d of %d runs past the record", i, count));
    }
    const char* e = h + at;
    LogEntryView entry;
    entry.address = Addr::FromRaw(LoadLe<uint64_t>(e));
    entry.version = LoadLe<uint64_t>(e + 8);
    entry.incarnation = LoadLe<uint32_t>(e + 16);
    const uint32_t n = LoadLe<uint32_t>(e + 20);
    if (!KnownOp(LoadLe<uint8_t>(e + 24))) {
      return absl::InvalidArgumentError(absl::StrFormat("log entry %d has unknown op %d", i, LoadLe<uint8_t>(e + 24)));
    }
    entry.op = static_cast<LogOp>(LoadLe<uint8_t>(e + 24));
    entry.size = LoadLe<uint32_t>(e + 28);
    at += kLogEntryHeaderBytes;
    if (total - at < n) {
      return absl::DataLossError(absl::StrFormat("log entry %d's %d payload bytes run past the record", i, n));
    }
    entry.payload = std::string_view(h + at, n);
    at += n;
    add(entry);
  }
  if (at != total) {
    return absl::DataLossError(absl::StrFormat("log record has %d bytes after its %d entries", total - at, count));
  }
  if (consumed != nullptr) *consumed = total;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LogRecord> DecodeLogRecord(std::string_view in, size_t* consumed) {
  LogRecord record;
  absl::Status s = DecodeRecord(
      in, &record,
      [&record](const LogEntryView& v) {
        record.entries.push_back(
            LogEntry{v.address, v.version, v.incarnation, v.op, v.size, std::string(v.payload)});
      },
      consumed);
  if (!s.ok()) return s;
  return record;
}

absl::Status DecodeLogRecordView(std::string_view in, LogRecordView* out, size_t* consumed) {
  out->entries.clear();
  return DecodeRecord(in, out, [out](const LogEntryView& v) { out->entries.push_back(v); }, consumed);
}

std::string EncodeTransactionId(uint64_t transaction) { return WireWriter().Put(transaction).Take(); }

}  // namespace farm::tx
