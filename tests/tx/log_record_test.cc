// Log records: round trips, back-to-back decoding, and refusal of anything damaged.
#include "tx/log_record.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace farm::tx {
namespace {

LogRecord Sample() {
  LogRecord r;
  r.kind = LogKind::kLock;
  r.transaction = 0x0102030405060708ull;
  r.epoch = 9;
  r.entries.push_back({Addr(7, 4096), 12, 3, LogOp::kWrite, 5, "hello"});
  r.entries.push_back({Addr(7, 8192), kAnyVersion, 0, LogOp::kAlloc, 300, std::string(300, 'z')});
  r.entries.push_back({Addr(8, 64), 20, 1, LogOp::kFree, 48, ""});
  r.entries.push_back({Addr(8, 128), 24, 2, LogOp::kWriteNewIncarnation, 2, "ab"});
  return r;
}

TEST(LogRecord, RoundTripsBackToBack) {
  std::string log;
  const LogRecord a = Sample();
  LogRecord b;
  b.kind = LogKind::kCommit;
  b.transaction = a.transaction;
  b.epoch = 9;
  ASSERT_TRUE(EncodeLogRecord(a, &log).ok());
  ASSERT_TRUE(EncodeLogRecord(b, &log).ok());
  size_t used = 0;
  absl::StatusOr<LogRecord> first = DecodeLogRecord(log, &used);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, a);
  absl::StatusOr<LogRecord> second = DecodeLogRecord(std::string_view(log).substr(used));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, b);
}

TEST(LogRecord, DamageIsRefusedNeverHalfDecoded) {
  std::string bytes;
  ASSERT_TRUE(EncodeLogRecord(Sample(), &bytes).ok());
  // Every truncation.
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeLogRecord(std::string_view(bytes).substr(0, n)).ok()) << n;
  }
  // Every single-byte change is caught (format, kind, sizes, checksum or body).
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i >= 28 && i < 32) continue;  // reserved header word: not checked
    std::string damaged = bytes;
    damaged[i] ^= 0x40;
    absl::StatusOr<LogRecord> r = DecodeLogRecord(damaged);
    EXPECT_FALSE(r.ok() && *r == Sample()) << "byte " << i;
    if (i >= 32 || i == 0 || i == 1 || (i >= 4 && i < 8) || (i >= 24 && i < 28)) {
      EXPECT_FALSE(r.ok()) << "byte " << i;
    }
  }
  std::string future = bytes;
  future[0] = 2;
  absl::StatusOr<LogRecord> r = DecodeLogRecord(future);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("format 2"), std::string::npos) << r.status();
}

// A view decodes the same record, its payloads inside the encoding, and a view decoded
// into again keeps its capacity (the backups' apply path allocates nothing).
TEST(LogRecord, AViewDecodesTheSameRecordInPlace) {
  std::string bytes;
  const LogRecord a = Sample();
  ASSERT_TRUE(EncodeLogRecord(a, &bytes).ok());
  LogRecordView view;
  size_t used = 0;
  ASSERT_TRUE(DecodeLogRecordView(bytes, &view, &used).ok());
  EXPECT_EQ(used, bytes.size());
  EXPECT_EQ(view.kind, a.kind);
  EXPECT_EQ(view.transaction, a.transaction);
  EXPECT_EQ(view.epoch, a.epoch);
  ASSERT_EQ(view.entries.size(), a.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const LogEntryView& e = view.entries[i];
    EXPECT_EQ(e.address, a.entries[i].address);
    EXPECT_EQ(e.version, a.entries[i].version);
    EXPECT_EQ(e.incarnation, a.entries[i].incarnation);
    EXPECT_EQ(e.op, a.entries[i].op);
    EXPECT_EQ(e.size, a.entries[i].size);
    EXPECT_EQ(e.payload, a.entries[i].payload);
    EXPECT_TRUE(e.payload.empty() ||
                (e.payload.data() >= bytes.data() && e.payload.data() + e.payload.size() <= bytes.data() + bytes.size()))
        << "entry " << i << " points into the encoding";
  }
  const LogEntryView* storage = view.entries.data();
  ASSERT_TRUE(DecodeLogRecordView(bytes, &view).ok());
  EXPECT_EQ(view.entries.size(), a.entries.size()) << "replaced, not appended";
  EXPECT_EQ(view.entries.data(), storage) << "the capacity is reused";
  // The same refusals as the owned decoding.
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeLogRecordView(std::string_view(bytes).substr(0, n), &view).ok()) << n;
  }
  std::string damaged = bytes;
  damaged[40] ^= 0x40;
  EXPECT_EQ(DecodeLogRecordView(damaged, &view).code(), absl::StatusCode::kDataLoss);
}

TEST(LogRecord, RandomGarbageNeverDecodes) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) {
    std::string junk(rng() % 200, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (junk.size() > 0) junk[0] = kLogFormat;  // past the first check
    EXPECT_FALSE(DecodeLogRecord(junk).ok());
  }
}

TEST(LogRecord, TooManyEntriesIsAnError) {
  LogRecord r;
  r.entries.resize(kMaxLogEntries + 1);
  std::string out;
  EXPECT_EQ(EncodeLogRecord(r, &out).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::tx
