// The durable log: records round-trip; group commit puts many records in one sync;
// crash-consistency at every sync point of a scripted workload under each policy's
// promise; torn tails cut, corrupt middle records refused with file and offset, foreign
// and unknown-format logs refused; a full disk fails appends and loses nothing; a failed
// sync fails the log for good; rotation to a new segment under concurrent appends; which
// files of a log directory a start reads.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/base/mutex.h"
#include "farm/storage/fault_injecting_file_system.h"
#include "farm/storage/file_system.h"
#include "farm/storage/log_files.h"
#include "farm/storage/log_format.h"
#include "farm/storage/log_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace farm::storage {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kIdentity = 0x0123456789abcdefull;
const std::string kDir = "/data";
const std::string kLog = "/data/tx.log";

std::string Payload(int i) { return absl::StrCat("record-", i, std::string(static_cast<size_t>(i % 17), 'x')); }

// Appends records and waits for each to be reported; returns the statuses.
class Recorder {
 public:
  LogWriter::Durable Track(int i) {
    {
      MutexLock lock(&mu_);
      if (static_cast<size_t>(i) >= results_.size()) results_.resize(i + 1, absl::UnknownError("pending"));
      ++pending_;
    }
    return [this, i](absl::Status s) {
      MutexLock lock(&mu_);
      results_[i] = s;
      --pending_;
      cv_.SignalAll();
    };
  }
  void WaitAll() {
    MutexLock lock(&mu_);
    cv_.Wait(&mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return pending_ == 0; });
  }
  std::vector<absl::Status> results() {
    MutexLock lock(&mu_);
    return results_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::vector<absl::Status> results_ ABSL_GUARDED_BY(mu_);
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
};

std::vector<std::string> Payloads(const ParsedLog& log) {
  std::vector<std::string> out;
  for (const LogRecordView& r : log.records) out.emplace_back(r.payload);
  return out;
}

absl::StatusOr<ParsedLog> Read(FileSystem& fs, std::string* bytes) {
  absl::StatusOr<std::string> file = fs.ReadFile(kLog);
  if (!file.ok()) return file.status();
  *bytes = std::move(*file);
  return ParseLog(*bytes, kIdentity, kLog);
}

std::unique_ptr<LogWriter> MustOpen(FileSystem& fs, SyncPolicy policy = {}) {
  std::string bytes;
  uint64_t valid = 0;
  if (absl::StatusOr<ParsedLog> log = Read(fs, &bytes); log.ok()) valid = log->valid_bytes;
  absl::StatusOr<std::unique_ptr<LogWriter>> w = LogWriter::Open(&fs, kLog, kIdentity, valid, policy);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? std::move(*w) : nullptr;
}

// A fresh log of records 0..4, all acknowledged, and the writer closed.
void WriteFiveRecords(FaultInjectingFileSystem& fs, Recorder& rec) {
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  std::unique_ptr<LogWriter> w = MustOpen(fs);
  for (int i = 0; i < 5; ++i) w->Append(0, Payload(i), rec.Track(i));
  rec.WaitAll();
}

TEST(SyncPolicyTest, ParsesTheFlag) {
  EXPECT_EQ(SyncPolicy::Parse("always")->kind, SyncPolicy::Kind::kAlways);
  EXPECT_EQ(SyncPolicy::Parse("none")->kind, SyncPolicy::Kind::kNone);
  absl::StatusOr<SyncPolicy> interval = SyncPolicy::Parse("interval:5");
  ASSERT_TRUE(interval.ok());
  EXPECT_EQ(interval->interval, absl::Milliseconds(5));
  EXPECT_EQ(interval->ToString(), "interval:5");
  for (const char* bad : {"", "sometimes", "interval:", "interval:0", "interval:-3", "interval:x"}) {
    EXPECT_EQ(SyncPolicy::Parse(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(LogTest, RecordsRoundTripAndAppendingContinuesAfterReopen) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  Recorder rec;
  {
    std::unique_ptr<LogWriter> w = MustOpen(fs);
    for (int i = 0; i < 50; ++i) w->Append(static_cast<uint8_t>(i % 3), Payload(i), rec.Track(i));
    rec.WaitAll();
  }
  {
    std::unique_ptr<LogWriter> w = MustOpen(fs);
    for (int i = 50; i < 60; ++i) w->Append(1, Payload(i), rec.Track(i));
    rec.WaitAll();
  }
  for (const absl::Status& s : rec.results()) ASSERT_TRUE(s.ok()) << s;
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->records.size(), 60u);
  EXPECT_FALSE(log->torn);
  for (int i = 0; i < 60; ++i) {
    EXPECT_EQ(log->records[i].payload, Payload(i));
    EXPECT_EQ(log->records[i].type, i < 50 ? i % 3 : 1);
  }
}

TEST(LogTest, GroupCommitSyncsManyRecordsAtOnce) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  Recorder rec;
  std::unique_ptr<LogWriter> w = MustOpen(fs);
  constexpr int kThreads = 4, kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int n = t * kPerThread + i;
        w->Append(0, Payload(n), rec.Track(n));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  rec.WaitAll();
  const LogWriterStats stats = w->stats();
  EXPECT_EQ(stats.records, uint64_t{kThreads * kPerThread});
  EXPECT_EQ(stats.syncs, stats.writes);  // always: one sync per group write
  EXPECT_LT(stats.syncs, stats.records) << "records shared syncs";
  w.reset();
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->records.size(), size_t{kThreads * kPerThread});
}

// Rotation while threads append: every record lands in exactly one segment, each thread's
// records in its order across the segments, every record reported durable; after a
// power cut the closed segments are whole (a rotation syncs them, whatever the policy).
// A new log under the parameter's policy.
class PolicyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs.CreateDir(kDir).ok());
    absl::StatusOr<SyncPolicy> parsed = SyncPolicy::Parse(GetParam());
    ASSERT_TRUE(parsed.ok());
    policy = *parsed;
    w = MustOpen(fs, policy);
  }
  FaultInjectingFileSystem fs;
  SyncPolicy policy;
  Recorder rec;
  std::unique_ptr<LogWriter> w;
};

TEST_P(PolicyTest, ConcurrentAppendsLandInOrderInExactlyOneSegment) {
  constexpr int kThreads = 3, kPerThread = 400, kSegments = 6;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int n = t * kPerThread + i;
        w->Append(0, absl::StrCat(t, ":", i), rec.Track(n));
      }
      --running;
    });
  }
  std::vector<std::string> paths = {kLog};
  for (int s = 1; s < kSegments; ++s) {
    while (running.load() > 0 && w->stats().records < static_cast<uint64_t>(s * kThreads * kPerThread / kSegments)) {
      std::this_thread::yield();
    }
    paths.push_back(absl::StrCat(kLog, ".", s));
    ASSERT_TRUE(w->Rotate(paths.back()).ok());
  }
  for (std::thread& t : threads) t.join();
  rec.WaitAll();
  for (const absl::Status& s : rec.results()) ASSERT_TRUE(s.ok()) << s;
  const uint64_t last_segment_bytes = w->stats().segment_bytes;
  w.reset();
  if (policy.kind != SyncPolicy::Kind::kNone) fs.Restart();  // closed: everything was synced
  std::vector<int> next(kThreads, 0);
  for (size_t s = 0; s < paths.size(); ++s) {
    absl::StatusOr<std::string> bytes = fs.ReadFile(paths[s]);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<ParsedLog> log = ParseLog(*bytes, kIdentity, paths[s]);
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_FALSE(log->torn);
    if (s + 1 == paths.size()) {
      EXPECT_EQ(bytes->size(), last_segment_bytes);
    }
    for (const LogRecordView& r : log->records) {
      const std::string p(r.payload);
      const int t = p[0] - '0';
      EXPECT_EQ(p, absl::StrCat(t, ":", next[t])) << "in " << paths[s];
      ++next[t];
    }
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kPerThread) << "thread " << t;
}

TEST(RotateFailureTest, ARotationThatCannotCreateItsFileKeepsTheCurrentOne) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  Recorder rec;
  std::unique_ptr<LogWriter> w = MustOpen(fs);
  w->Append(0, Payload(0), rec.Track(0));
  rec.WaitAll();
  fs.set_capacity(fs.used());  // no room for the next segment's header
  EXPECT_EQ(w->Rotate(kLog + ".1").code(), absl::StatusCode::kResourceExhausted);
  // Left behind, an empty next segment would make the current file a closed segment
  // at the next start, and an ordinary torn tail of it would stop the node (DataLoss).
  EXPECT_TRUE(absl::IsNotFound(fs.ReadFile(kLog + ".1").status())) << "the failed rotation left its file behind";
  fs.set_capacity(std::numeric_limits<uint64_t>::max());
  w->Append(0, Payload(1), rec.Track(1));
  rec.WaitAll();
  EXPECT_TRUE(rec.results()[1].ok());
  w.reset();
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(Payloads(*log), (std::vector<std::string>{Payload(0), Payload(1)}));
}

// A record over kMaxRecordBytes would read back as a torn tail (the parser cannot take
// it for a record), so the writer refuses it, writes nothing of it, and goes on.
TEST_P(PolicyTest, ARecordOverTheLimitIsRefusedAndTheLogGoesOn) {
  w->Append(0, Payload(0), rec.Track(0));
  w->Append(0, std::string(kMaxRecordBytes + 1, 'b'), rec.Track(1));
  w->Append(0, Payload(2), rec.Track(2));
  rec.WaitAll();
  const std::vector<absl::Status> results = rec.results();
  EXPECT_TRUE(results[0].ok()) << results[0];
  EXPECT_EQ(results[1].code(), absl::StatusCode::kInvalidArgument) << results[1];
  EXPECT_TRUE(results[2].ok()) << results[2];
  w.reset();
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_FALSE(log->torn);
  EXPECT_EQ(Payloads(*log), (std::vector<std::string>{Payload(0), Payload(2)}));
}

// Unwaited records keep their place in the order and reach the file with the next
// write, the syncer's tick or the close, under every policy; under always, one alone
// starts no group write (no write, no sync of its own: a commit decision is one).
TEST_P(PolicyTest, UnwaitedRecordsKeepTheirPlaceAndReachTheFile) {
  w->Append(0, "a", rec.Track(0));
  w->AppendUnwaited(0, "b");
  w->Append(0, "c", rec.Track(1));
  rec.WaitAll();
  const LogWriterStats before = w->stats();
  w->AppendUnwaited(0, "d");
  if (policy.kind == SyncPolicy::Kind::kAlways) {
    absl::SleepFor(absl::Milliseconds(100));  // time enough for a flusher that was woken
    const LogWriterStats after = w->stats();
    EXPECT_EQ(after.writes, before.writes) << "an unwaited record was written on its own";
    EXPECT_EQ(after.syncs, before.syncs) << "an unwaited record was synced on its own";
    EXPECT_EQ(after.records, before.records + 1);
    std::string bytes;
    absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(Payloads(*log), (std::vector<std::string>{"a", "b", "c"}));
  }
  if (policy.kind == SyncPolicy::Kind::kInterval) {
    // The syncer writes "d" on its next tick, with nothing else appended.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    std::string bytes;
    size_t seen = 0;
    while (absl::Now() < deadline && seen < 4) {
      absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
      seen = log.ok() ? log->records.size() : 0;
      absl::SleepFor(absl::Milliseconds(1));
    }
    EXPECT_EQ(seen, 4u) << "the syncer did not write the unwaited record";
  }
  w->Close();
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(Payloads(*log), (std::vector<std::string>{"a", "b", "c", "d"}));
}

void Touch(FileSystem& fs, const std::string& path) { ASSERT_TRUE(fs.OpenForAppend(path).ok()); }

TEST(LogFilesTest, ReadsTheNewestCheckpointAndTheSegmentsAfterItAndNamesWhatIsStale) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  absl::StatusOr<LogFiles> empty = ListLogFiles(&fs, kDir);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->checkpoint.has_value());
  EXPECT_EQ(empty->segments, std::vector<uint64_t>{0});
  for (uint64_t s : {0, 1, 2, 3}) Touch(fs, SegmentPath(kDir, s));
  Touch(fs, CheckpointPath(kDir, 1));
  Touch(fs, CheckpointPath(kDir, 2));
  Touch(fs, CheckpointPath(kDir, 3) + ".tmp");
  absl::StatusOr<LogFiles> files = ListLogFiles(&fs, kDir);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->checkpoint, 2u);
  EXPECT_EQ(files->segments, (std::vector<uint64_t>{2, 3}));
  std::vector<std::string> stale = files->stale;
  std::sort(stale.begin(), stale.end());
  EXPECT_EQ(stale, (std::vector<std::string>{CheckpointPath(kDir, 1), CheckpointPath(kDir, 3) + ".tmp",
                                             SegmentPath(kDir, 0), SegmentPath(kDir, 1)}));
}

TEST(LogFilesTest, AMissingSegmentOrCheckpointIsDataLoss) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  Touch(fs, SegmentPath(kDir, 0));
  Touch(fs, SegmentPath(kDir, 2));
  absl::StatusOr<LogFiles> gap = ListLogFiles(&fs, kDir);
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(gap.status().message(), HasSubstr("log.1 is missing"));
  ASSERT_TRUE(fs.Remove(SegmentPath(kDir, 0)).ok());
  absl::StatusOr<LogFiles> no_checkpoint = ListLogFiles(&fs, kDir);
  EXPECT_EQ(no_checkpoint.status().code(), absl::StatusCode::kDataLoss);
}

INSTANTIATE_TEST_SUITE_P(Policies, PolicyTest, ::testing::Values("always", "interval:1", "none"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (ch == ':') ch = '_';
                           }
                           return name;
                         });

// The scripted workload: bursts of 1, 2 and 3 records, each burst waited for. With the
// machine crashing at the k-th sync, for every k: after a restart the log holds a prefix
// of what was appended that includes every record reported durable (always), or at least
// every record reported before the last successful sync (interval, none: nothing
// reported after the crash point either way).
struct CrashOutcome {
  int appended = 0;
  int acknowledged = 0;  // prefix of records reported OK before the crash
  std::vector<std::string> recovered;
};

CrashOutcome RunAndCrash(int crash_at_sync, SyncPolicy policy) {
  FaultInjectingFileSystem fs;
  EXPECT_TRUE(fs.CreateDir(kDir).ok());
  CrashOutcome out;
  {
    std::unique_ptr<LogWriter> w = MustOpen(fs, policy);  // the header's sync is sync 1
    fs.CrashAtSync(crash_at_sync);
    Recorder rec;
    for (int burst = 0; burst < 12 && !fs.crashed(); ++burst) {
      for (int j = 0; j <= burst % 3; ++j, ++out.appended) w->Append(0, Payload(out.appended), rec.Track(out.appended));
      rec.WaitAll();
    }
    w.reset();
    const std::vector<absl::Status> results = rec.results();
    while (out.acknowledged < static_cast<int>(results.size()) && results[out.acknowledged].ok()) ++out.acknowledged;
    for (size_t i = out.acknowledged; i < results.size(); ++i) {
      EXPECT_FALSE(results[i].ok() && policy.kind == SyncPolicy::Kind::kAlways)
          << "record " << i << " acknowledged after an earlier one failed";
    }
  }
  fs.Restart();
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  EXPECT_TRUE(log.ok()) << log.status();
  if (log.ok()) out.recovered = Payloads(*log);
  return out;
}

TEST(LogCrashTest, AlwaysLosesNoAcknowledgedRecordAtAnySyncPoint) {
  int crashes_seen = 0;
  for (int k = 1; k <= 14; ++k) {
    const CrashOutcome o = RunAndCrash(k, SyncPolicy{});
    ASSERT_LE(o.recovered.size(), static_cast<size_t>(o.appended)) << "k=" << k;
    for (size_t i = 0; i < o.recovered.size(); ++i) ASSERT_EQ(o.recovered[i], Payload(static_cast<int>(i))) << "k=" << k;
    ASSERT_GE(o.recovered.size(), static_cast<size_t>(o.acknowledged)) << "k=" << k << ": an acknowledged record was lost";
    // At the k-th sync the records of that group were not acknowledged, and are gone.
    EXPECT_EQ(o.recovered.size(), static_cast<size_t>(o.acknowledged)) << "k=" << k;
    crashes_seen += o.appended > o.acknowledged;
  }
  EXPECT_GT(crashes_seen, 10) << "the crash points fell inside the workload";
}

TEST(LogCrashTest, NonePromisesOnlyWhatTheOsWroteBack) {
  // Cache mode: records are acknowledged once written and never synced, so a machine
  // crash keeps exactly what was synced — the header — and the log stays readable.
  const CrashOutcome o = RunAndCrash(100, SyncPolicy{SyncPolicy::Kind::kNone});
  EXPECT_EQ(o.acknowledged, o.appended);
  EXPECT_TRUE(o.recovered.empty());
}

TEST(LogCrashTest, IntervalLosesAtMostTheRecordsSinceItsLastSync) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  Recorder rec;
  std::unique_ptr<LogWriter> w = MustOpen(fs, *SyncPolicy::Parse("interval:1"));
  for (int i = 0; i < 20; ++i) w->Append(0, Payload(i), rec.Track(i));
  rec.WaitAll();  // acknowledged once written, before any sync covers them
  // Within the interval the flusher syncs what it wrote (a sync that started after all
  // 20 were written)...
  const uint64_t syncs_before = w->stats().syncs;
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  while (w->stats().syncs < syncs_before + 2 && absl::Now() < give_up) {
    w->Append(0, "tick", [](absl::Status) {});
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_GE(w->stats().syncs, syncs_before + 2);
  // ...so a crash now keeps those 20 (acknowledged at once, before their sync).
  fs.CrashAtSync(1);
  absl::SleepFor(absl::Milliseconds(20));
  w.reset();
  fs.Restart();
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_GE(log->records.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(log->records[i].payload, Payload(i));
}

TEST(LogFileTest, ATornTailIsCutAndAppendingGoesOn) {
  FaultInjectingFileSystem fs;
  Recorder rec;
  WriteFiveRecords(fs, rec);
  // Half of a sixth record reached the disk before the machine stopped.
  std::string sixth;
  EncodeRecord(0, Payload(5), &sixth);
  {
    absl::StatusOr<std::unique_ptr<WritableFile>> f = fs.OpenForAppend(kLog);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(sixth.substr(0, sixth.size() / 2)).ok());
    ASSERT_TRUE((*f)->Sync().ok());
  }
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->torn);
  EXPECT_EQ(log->records.size(), 5u);
  const uint64_t valid = log->valid_bytes;
  EXPECT_EQ(valid + sixth.size() / 2, bytes.size());
  {
    std::unique_ptr<LogWriter> w = MustOpen(fs);  // cuts the tail, appends after record 5
    w->Append(0, Payload(6), rec.Track(6));
    rec.WaitAll();
  }
  log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_FALSE(log->torn);
  EXPECT_THAT(Payloads(*log), ::testing::ElementsAre(Payload(0), Payload(1), Payload(2), Payload(3), Payload(4),
                                                     Payload(6)));
}

TEST(LogFileTest, ACorruptRecordBeforeTheTailStopsRecoveryNamingFileAndOffset) {
  FaultInjectingFileSystem fs;
  Recorder rec;
  WriteFiveRecords(fs, rec);
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok());
  const uint64_t third = log->records[2].offset;
  const std::string original(1, bytes[third + kRecordHeaderBytes + 2]);
  ASSERT_TRUE(fs.Corrupt(kLog, third + kRecordHeaderBytes + 2, "#").ok());  // a byte of its payload
  log = Read(fs, &bytes);
  ASSERT_EQ(log.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(log.status().message(), HasSubstr(kLog));
  EXPECT_THAT(log.status().message(), HasSubstr(absl::StrCat("offset ", third)));
  // The same damage in the last record is a torn tail instead.
  ASSERT_TRUE(fs.Corrupt(kLog, third + kRecordHeaderBytes + 2, original).ok());  // repaired
  log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok());
  const uint64_t last = log->records[4].offset;
  ASSERT_TRUE(fs.Corrupt(kLog, last + kRecordHeaderBytes + 1, "#").ok());
  log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->torn);
  EXPECT_EQ(log->records.size(), 4u);
}

// The checksum does not cover a record's length: a damaged length field makes the record
// look cut short (past the end) or oversized. A whole record after it shows it is not a
// torn tail, so it stops recovery like any corruption, instead of the records after it
// being cut off as a tail.
TEST(LogFileTest, ADamagedLengthBeforeTheTailStopsRecoveryInsteadOfCuttingTheRest) {
  for (const std::string& length : {std::string("\xff\xff\xff\x7f", 4), std::string("\x00\x10\x00\x00", 4)}) {
    FaultInjectingFileSystem fs;
    Recorder rec;
    WriteFiveRecords(fs, rec);
    std::string bytes;
    absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
    ASSERT_TRUE(log.ok());
    const uint64_t second = log->records[1].offset;
    const uint64_t third = log->records[2].offset;
    ASSERT_TRUE(fs.Corrupt(kLog, second, length).ok());  // oversized; past the end of the file
    log = Read(fs, &bytes);
    ASSERT_EQ(log.status().code(), absl::StatusCode::kDataLoss)
        << "acknowledged records after a damaged length were cut off as a torn tail";
    EXPECT_THAT(log.status().message(), HasSubstr(absl::StrCat("offset ", second)));
    EXPECT_THAT(log.status().message(), HasSubstr(absl::StrCat("follows at offset ", third)));
  }
}

// What a machine crash can leave past the last whole record — the file grown but its
// data never written (zeros), or half a record then zeros — is a torn tail: cut off,
// and the node starts.
TEST(LogFileTest, ZerosAfterTheLastRecordAreATornTail) {
  FaultInjectingFileSystem fs;
  Recorder rec;
  WriteFiveRecords(fs, rec);
  std::string sixth;
  EncodeRecord(0, Payload(5), &sixth);
  for (const std::string& tail : {std::string(4096, '\0'), sixth.substr(0, 7) + std::string(3000, '\0')}) {
    {
      absl::StatusOr<std::unique_ptr<WritableFile>> f = fs.OpenForAppend(kLog);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE((*f)->Append(tail).ok());
      ASSERT_TRUE((*f)->Sync().ok());
    }
    std::string bytes;
    absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_TRUE(log->torn);
    EXPECT_EQ(log->records.size(), 5u);
    EXPECT_EQ(log->valid_bytes + tail.size(), bytes.size());
    ASSERT_TRUE(fs.Truncate(kLog, log->valid_bytes).ok());
  }
}

TEST(LogFileTest, LogsOfAnotherOwnerOrFormatAreRefused) {
  const std::string mine = EncodeLogHeader(kIdentity);
  EXPECT_EQ(ParseLog(EncodeLogHeader(7), kIdentity, "x.log").status().code(),
            absl::StatusCode::kFailedPrecondition);
  std::string future = mine;
  future[8] = 2;  // format 2
  EXPECT_EQ(ParseLog(future, kIdentity, "x.log").status().code(), absl::StatusCode::kDataLoss)
      << "a header changed without its checksum is damage";
  EXPECT_EQ(ParseLog("not a log at all, longer than a header", kIdentity, "x.log").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseLog(mine, kIdentity, "x.log").ok());
  EXPECT_TRUE(ParseLog("", kIdentity, "x.log").ok());
}

TEST(LogFileTest, AFullDiskFailsAppendsWithoutLosingAnyAndTheLogGoesOn) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  Recorder rec;
  std::unique_ptr<LogWriter> w = MustOpen(fs);
  bool failed_for_good = false;
  w->OnFailure([&failed_for_good](const absl::Status&) { failed_for_good = true; });
  for (int i = 0; i < 3; ++i) w->Append(0, Payload(i), rec.Track(i));
  rec.WaitAll();
  fs.set_capacity(0);  // full
  w->Append(0, Payload(3), rec.Track(3));
  rec.WaitAll();
  EXPECT_EQ(rec.results()[3].code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(w->status().ok()) << "a full disk does not fail the log";
  EXPECT_FALSE(failed_for_good) << "nor tells its owner it failed";
  fs.set_capacity(UINT64_MAX);
  w->Append(0, Payload(4), rec.Track(4));
  rec.WaitAll();
  EXPECT_TRUE(rec.results()[4].ok());
  w.reset();
  std::string bytes;
  absl::StatusOr<ParsedLog> log = Read(fs, &bytes);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_THAT(Payloads(*log), ::testing::ElementsAre(Payload(0), Payload(1), Payload(2), Payload(4)));
}

TEST(LogFileTest, AFailedSyncFailsTheLogForGood) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  Recorder rec;
  std::unique_ptr<LogWriter> w = MustOpen(fs);
  std::vector<absl::Status> told;  // the failure listener's calls (under the log's lock)
  w->OnFailure([&told](const absl::Status& s) { told.push_back(s); });
  w->Append(0, Payload(0), rec.Track(0));
  rec.WaitAll();
  fs.FailNextSync(absl::InternalError("EIO"));
  w->Append(0, Payload(1), rec.Track(1));
  rec.WaitAll();
  w->Append(0, Payload(2), rec.Track(2));
  rec.WaitAll();
  ASSERT_EQ(told.size(), 1u) << "the owner hears the failure once";
  EXPECT_EQ(told[0], w->status());
  // An owner that listens only later hears it at once.
  int late = 0;
  w->OnFailure([&late](const absl::Status& s) { late += s.ok() ? 0 : 1; });
  EXPECT_EQ(late, 1);
  const std::vector<absl::Status> r = rec.results();
  EXPECT_TRUE(r[0].ok());
  EXPECT_FALSE(r[1].ok());
  EXPECT_TRUE(MaybeDurable(r[1])) << "written before the sync failed: a restart may replay it";
  EXPECT_FALSE(r[2].ok()) << "nothing is acknowledged on a log after a failed sync";
  EXPECT_FALSE(MaybeDurable(r[2])) << "never written";
  EXPECT_FALSE(MaybeDurable(w->status()));
  EXPECT_THAT(std::string(w->status().message()), HasSubstr("no longer trusted"));
}

TEST(PosixFileSystemTest, LogsOnARealDirectory) {
  const std::string dir = ::testing::TempDir() + "farm_log_" + std::to_string(::getpid());
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem();
  ASSERT_TRUE(fs->CreateDir(dir).ok());
  const std::string path = dir + "/tx.log";
  Recorder rec;
  {
    absl::StatusOr<std::unique_ptr<LogWriter>> w = LogWriter::Open(fs.get(), path, kIdentity, 0, SyncPolicy{});
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < 100; ++i) (*w)->Append(0, Payload(i), rec.Track(i));
    rec.WaitAll();
  }
  absl::StatusOr<std::string> bytes = fs->ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<ParsedLog> log = ParseLog(*bytes, kIdentity, path);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->records.size(), 100u);
  ASSERT_TRUE(fs->Truncate(path, log->records[50].offset + 3).ok());  // a torn record
  bytes = fs->ReadFile(path);
  log = ParseLog(*bytes, kIdentity, path);
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->torn);
  EXPECT_EQ(log->records.size(), 50u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace farm::storage
