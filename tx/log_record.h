// Transaction log records: what a coordinator sends to the primaries and backups of a
// transaction's write set (paper section 3.4: "both primaries and replicas log the
// message"), and what backups keep — in memory now, on disk for recovery later, so the
// format is versioned, self-delimiting and checksummed.
//
// A record, little-endian:
//   0   u8   format (kLogFormat)         4   u32  total bytes, header included
//   1   u8   kind (LogKind)              8   u64  transaction id
//   2   u16  entry count                 16  u64  configuration epoch
//                                        24  u32  CRC-32C of bytes [32, total)
//                                        28  u32  reserved (0)
//   32  entries, each:
//        u64 address (Addr raw), u64 version (expected for locks, new for commits),
//        u32 incarnation (low 32 bits, as in FatPtr), u32 payload bytes n,
//        u8 op (LogOp), 3 bytes reserved (0), u32 the object's payload size (FatPtr
//        size; equals n for writes, n = 0 for frees and kAllocRaw), then n bytes of
//        payload
// Decoding checks every size against the buffer before reading and the checksum before
// trusting anything past the header; any mismatch is DataLoss or InvalidArgument naming
// the field, never a partially decoded record.
#ifndef FARM_TX_LOG_RECORD_H_
#define FARM_TX_LOG_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/base/address.h"
#include "farm/base/object_copy.h"  // kAnyVersion

namespace farm::tx {

inline constexpr uint8_t kLogFormat = 1;
inline constexpr size_t kLogHeaderBytes = 32;
inline constexpr size_t kLogEntryHeaderBytes = 32;
inline constexpr uint16_t kMaxLogEntries = 0xFFFF;

enum class LogKind : uint8_t {
  kLock = 1,    // prepare: lock these objects at the expected versions, keep the writes
  kCommit = 2,  // the transaction committed: apply what its lock record carried
  kAbort = 3,   // the transaction aborted: drop its lock record, release its locks
  kValidate = 4,  // not logged: the versions a transaction read, for VALIDATE
  // Not logged: a read-only transaction's VALIDATE. It also accepts objects locked in
  // shared mode at the version read: their holders serialize after it (participant.h).
  kValidateReadOnly = 5,
};

enum class LogOp : uint8_t {
  kWrite = 1,  // new payload for an existing object
  kAlloc = 2,  // a new object: set its allocated bit, write the payload
  kFree = 3,   // free the object (no payload)
  kWriteNewIncarnation = 4,  // kWrite that also increments the object's incarnation
  // One-sided objects (farm/base/object_layout.h), never payload-carrying:
  kAllocRaw = 5,  // a new one-sided object of `size` zero bytes: allocated bit, raw header
  kFreeRaw = 6,   // free a one-sided object that rawFree marked dying (or that is lost)
};

// Whether an entry of `op` carries the object's payload (exactly `size` bytes); the
// others carry none.
constexpr bool CarriesPayload(LogOp op) {
  return op == LogOp::kWrite || op == LogOp::kAlloc || op == LogOp::kWriteNewIncarnation;
}


struct LogEntry {
  Addr address;
  uint64_t version = 0;
  uint32_t incarnation = 0;
  LogOp op = LogOp::kWrite;
  uint32_t size = 0;  // the object's payload bytes
  std::string payload;

  friend bool operator==(const LogEntry&, const LogEntry&) = default;
};

struct LogRecord {
  LogKind kind = LogKind::kLock;
  uint64_t transaction = 0;
  uint64_t epoch = 0;
  std::vector<LogEntry> entries;

  friend bool operator==(const LogRecord&, const LogRecord&) = default;
};

// A decoded entry whose payload refers to the encoding it came from.
struct LogEntryView {
  Addr address;
  uint64_t version = 0;
  uint32_t incarnation = 0;
  LogOp op = LogOp::kWrite;
  uint32_t size = 0;
  std::string_view payload;

  // A view of `e` (valid while `e` is).
  static LogEntryView Of(const LogEntry& e) {
    return LogEntryView{e.address, e.version, e.incarnation, e.op, e.size, e.payload};
  }
};

// A decoded record that refers to its encoding, which must outlive it. Decoding into a
// view reuses its entries' capacity: a thread that keeps one decodes records without
// allocating (the backups' apply path).
struct LogRecordView {
  LogKind kind = LogKind::kLock;
  uint64_t transaction = 0;
  uint64_t epoch = 0;
  std::vector<LogEntryView> entries;

  // A view of `r` (valid while `r` is).
  static LogRecordView Of(const LogRecord& r) {
    LogRecordView v{r.kind, r.transaction, r.epoch, {}};
    v.entries.reserve(r.entries.size());
    for (const LogEntry& e : r.entries) v.entries.push_back(LogEntryView::Of(e));
    return v;
  }
};

// Appends the encoding of `record` to `out`. InvalidArgument for more than
// kMaxLogEntries entries or a record over 4 GiB.
absl::Status EncodeLogRecord(const LogRecord& record, std::string* out);
// The same, with another kind and epoch than the record's (no copy of its entries).
absl::Status EncodeLogRecordAs(const LogRecord& record, LogKind kind, uint64_t epoch, std::string* out);

// Decodes one record from the front of `in`; `consumed` gets its length so records can
// be read back to back from a log.
absl::StatusOr<LogRecord> DecodeLogRecord(std::string_view in, size_t* consumed = nullptr);
// The same checks, into `out` (whose entries are replaced; unspecified on error).
absl::Status DecodeLogRecordView(std::string_view in, LogRecordView* out, size_t* consumed = nullptr);

// The payload of a node log's decision records (kTxCommitted, kTxAborted): the
// transaction id, 8 bytes little-endian.
std::string EncodeTransactionId(uint64_t transaction);

}  // namespace farm::tx

#endif  // FARM_TX_LOG_RECORD_H_
