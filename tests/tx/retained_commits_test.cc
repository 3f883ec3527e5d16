// What lets failover finish a single-machine commit its primary left half replicated
// (tx/retained_commits.h): the primary's numbering and watermark, a backup's retained
// records, the messages that carry them, and a backup copy's apply that takes a record
// twice, or one with entries of regions it does not hold, without harm; and what a
// restart keeps of them for reconciling replicas (tx/recovery.h, "retained").
#include "tx/retained_commits.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "alloc/backup_regions.h"
#include "alloc/durable_records.h"
#include "farm/storage/log_format.h"
#include "farm/storage/node_log_types.h"
#include "farm/base/object_codec.h"
#include "gtest/gtest.h"
#include "tx/backup_log.h"
#include "tx/recovery.h"
#include "tx/tx_messages.h"

namespace farm::tx {
namespace {

constexpr RegionId kHeld = 7;
constexpr RegionId kElsewhere = 8;
constexpr uint64_t kRegionBytes = uint64_t{32} << 20;  // the metadata unit and the longest block
constexpr uint64_t kBase = uint64_t{1} << 20;         // past the metadata unit

LogEntry Write(RegionId region, uint64_t offset, uint64_t from_version, char fill, LogOp op = LogOp::kWrite) {
  LogEntry e;
  e.address = Addr(region, offset);
  e.version = from_version;
  e.op = op;
  e.size = 64;
  e.payload = std::string(64, fill);
  return e;
}

LogRecord Commit(uint64_t transaction, std::vector<LogEntry> entries) {
  LogRecord r;
  r.kind = LogKind::kCommit;
  r.transaction = transaction;
  r.epoch = 3;
  r.entries = std::move(entries);
  return r;
}

std::string Encoded(const LogRecord& r) {
  std::string out;
  EXPECT_TRUE(EncodeLogRecord(r, &out).ok());
  return out;
}

uint64_t TransactionOf(absl::string_view encoded) {
  absl::StatusOr<LogRecord> r = DecodeLogRecord(std::string_view(encoded.data(), encoded.size()));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->transaction : 0;
}

TEST(ApplySequencerTest, TheWatermarkIsTheLowestNumberStillOpen) {
  ApplySequencer s;
  EXPECT_EQ(s.watermark(), 1u);
  const uint64_t a = s.Begin(), b = s.Begin(), c = s.Begin();
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(c, 3u);
  EXPECT_EQ(s.open(), 3u);
  s.End(b);
  EXPECT_EQ(s.watermark(), 1u) << "1 is still open";
  s.End(a);
  EXPECT_EQ(s.watermark(), 3u);
  s.End(a);  // ended already: nothing changes
  EXPECT_EQ(s.watermark(), 3u);
  s.End(c);
  EXPECT_EQ(s.watermark(), 4u);
  EXPECT_EQ(s.open(), 0u);
  EXPECT_EQ(s.Begin(), 4u);
}

TEST(RetainedCommitsTest, RecordsStayUntilTheWatermarkPassesThem) {
  RetainedCommits kept;
  const absl::flat_hash_set<RegionId> held = {kHeld};
  for (uint64_t seq = 1; seq <= 3; ++seq) kept.Retain(5, 0, seq, 1, Encoded(Commit(100 + seq, {Write(kHeld, 0, 0, 'a')})));
  EXPECT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.Touching(held).size(), 3u);
  kept.Retain(5, 0, 4, 3, Encoded(Commit(104, {Write(kHeld, 0, 0, 'a')})));
  EXPECT_EQ(kept.size(), 2u) << "1 and 2 reached every backup";
  kept.Retain(5, 0, 3, 3, Encoded(Commit(103, {Write(kHeld, 0, 0, 'a')})));
  EXPECT_EQ(kept.size(), 2u) << "a record sent again is kept once";
  kept.Retain(5, 0, 2, 3, Encoded(Commit(102, {Write(kHeld, 0, 0, 'a')})));
  EXPECT_EQ(kept.size(), 2u) << "a late copy below the watermark is not kept";
  std::vector<absl::string_view> touching = kept.Touching(held);
  ASSERT_EQ(touching.size(), 2u);
  EXPECT_EQ(TransactionOf(touching[0]), 103u);
  EXPECT_EQ(TransactionOf(touching[1]), 104u);
  // Another thread of the sender is another numbering.
  kept.Retain(5, 1, 1, 1, Encoded(Commit(200, {Write(kHeld, 0, 0, 'b')})));
  EXPECT_EQ(kept.size(), 3u);
}

// A record given as a view is copied into the string of one dropped earlier: what is
// kept is the record's bytes, and a record's string is reused, not freed, while the
// spares stay few and small.
TEST(RetainedCommitsTest, ViewsAreKeptInTheStringsOfDroppedRecords) {
  RetainedCommits kept;
  const absl::flat_hash_set<RegionId> held = {kHeld};
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    const std::string bytes = Encoded(Commit(100 + seq, {Write(kHeld, 0, 0, 'a')}));
    kept.Retain(5, 0, seq, 1, absl::string_view(bytes));
  }
  EXPECT_EQ(kept.spare(), 0u);
  // 1..3 dropped (their strings kept for reuse), 4 kept in one of them.
  const std::string fourth = Encoded(Commit(104, {Write(kHeld, 0, 0, 'b')}));
  kept.Retain(5, 0, 4, 4, absl::string_view(fourth));
  EXPECT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept.spare(), 2u);
  std::vector<absl::string_view> touching = kept.Touching(held);
  ASSERT_EQ(touching.size(), 1u);
  EXPECT_EQ(touching[0], fourth);
  EXPECT_NE(touching[0].data(), fourth.data()) << "a copy, not the caller's bytes";
  // Sent again, or late: nothing taken from the spares.
  kept.Retain(5, 0, 4, 4, absl::string_view(fourth));
  kept.Retain(5, 0, 3, 4, absl::string_view(fourth));
  EXPECT_EQ(kept.spare(), 2u);
  // A record too large to keep as a spare is freed when dropped.
  const std::string large = Encoded(Commit(105, {Write(kHeld, 0, 0, 'c')})) +
                            std::string(RetainedCommits::kMaxSpareCapacity, 'z');
  kept.Retain(5, 0, 5, 4, std::string(large));
  kept.Retain(5, 0, 6, 6, absl::string_view(fourth));
  EXPECT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept.spare(), 2u) << "4's string back, the large one freed, one taken for 6";
  // Never more than kMaxSpare.
  for (uint64_t seq = 7; seq < 7 + 2 * RetainedCommits::kMaxSpare; ++seq) {
    kept.Retain(5, 0, seq, 6, Encoded(Commit(seq, {Write(kHeld, 0, 0, 'd')})));
  }
  kept.Retain(5, 0, 100, 100, absl::string_view(fourth));
  EXPECT_EQ(kept.spare(), RetainedCommits::kMaxSpare - 1);
  EXPECT_EQ(kept.Touching(held).size(), 1u);
}

TEST(RetainedCommitsTest, TouchingFindsRecordsWithAnEntryInTheRegionsInAFixedOrder) {
  RetainedCommits kept;
  kept.Retain(9, 0, 1, 1, Encoded(Commit(1, {Write(kElsewhere, 0, 0, 'x')})));
  kept.Retain(4, 0, 1, 1, Encoded(Commit(2, {Write(kElsewhere, 0, 0, 'x'), Write(kHeld, 64, 0, 'y')})));
  kept.Retain(2, 3, 1, 1, Encoded(Commit(3, {Write(kHeld, 0, 0, 'z')})));
  std::vector<absl::string_view> touching = kept.Touching({kHeld});
  ASSERT_EQ(touching.size(), 2u);
  EXPECT_EQ(TransactionOf(touching[0]), 3u) << "sender 2 before sender 4";
  EXPECT_EQ(TransactionOf(touching[1]), 2u);
  EXPECT_EQ(kept.Touching({kElsewhere}).size(), 2u);
  EXPECT_TRUE(kept.Touching({99}).empty());
}

TEST(RetainedCommitsTest, ADepartedSendersRecordsAreSetAsideThenForgotten) {
  RetainedCommits kept;
  kept.Retain(5, 0, 1, 1, Encoded(Commit(1, {Write(kHeld, 0, 0, 'a')})));
  kept.Retain(5, 0, 2, 1, Encoded(Commit(2, {Write(kHeld, 0, 0, 'a')})));
  kept.Retain(6, 0, 1, 1, Encoded(Commit(3, {Write(kHeld, 0, 0, 'a')})));
  const absl::Time now = absl::FromUnixSeconds(1000);
  kept.Departed({5}, now, absl::Minutes(10));
  // Node 5 comes back as another process: its numbers start again, apart from the old.
  kept.Retain(5, 0, 1, 1, Encoded(Commit(4, {Write(kHeld, 0, 0, 'b')})));
  EXPECT_EQ(kept.size(), 4u);
  std::vector<absl::string_view> touching = kept.Touching({kHeld});
  ASSERT_EQ(touching.size(), 4u) << "the set-aside records are still gathered";
  EXPECT_EQ(TransactionOf(touching[0]), 1u);
  EXPECT_EQ(TransactionOf(touching[1]), 2u);
  kept.Purge(now + absl::Minutes(9));
  EXPECT_EQ(kept.size(), 4u);
  kept.Purge(now + absl::Minutes(10));
  EXPECT_EQ(kept.size(), 2u);
  touching = kept.Touching({kHeld});
  ASSERT_EQ(touching.size(), 2u);
  EXPECT_EQ(TransactionOf(touching[0]), 4u);
  EXPECT_EQ(TransactionOf(touching[1]), 3u);
}

// An apply request decoded, its record copied out of the view.
struct DecodedApply {
  uint64_t sequence = 0;
  uint64_t watermark = 0;
  NodeId sender = 0;
  uint16_t sender_thread = 0;
  uint32_t sender_boot = 0;
  LogRecord record;
};

absl::StatusOr<DecodedApply> DecodeApply(absl::string_view in, absl::string_view* record_bytes = nullptr) {
  ApplyRequest header;
  LogRecordView view;
  if (absl::Status s = DecodeApplyRequest(in, &header, &view, record_bytes); !s.ok()) return s;
  DecodedApply out{header.sequence,      header.watermark,  header.sender, header.sender_thread,
                   header.sender_boot,   {view.kind, view.transaction, view.epoch, {}}};
  for (const LogEntryView& e : view.entries) {
    out.record.entries.push_back(LogEntry{e.address, e.version, e.incarnation, e.op, e.size, std::string(e.payload)});
  }
  return out;
}

TEST(RetainedMessagesTest, AnApplyRequestRoundTripsAndRejectsDamage) {
  const LogRecord record = Commit(77, {Write(kHeld, 0, 4, 'q'), Write(kElsewhere, 128, 8, 'r')});
  std::string bytes;
  ApplyRequest header;
  header.sender = 3;
  header.sender_thread = 2;
  header.sender_boot = 7;
  header.sequence = 12;
  header.watermark = 9;
  ASSERT_TRUE(EncodeApplyRequest(header, record, record.epoch, &bytes).ok());
  absl::string_view record_bytes;
  absl::StatusOr<DecodedApply> back = DecodeApply(bytes, &record_bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->sequence, 12u);
  EXPECT_EQ(back->watermark, 9u);
  EXPECT_EQ(back->sender, 3u);
  EXPECT_EQ(back->sender_thread, 2u);
  EXPECT_EQ(back->sender_boot, 7u);
  EXPECT_EQ(back->record, record);
  EXPECT_EQ(record_bytes.size(), bytes.size() - kApplyHeaderBytes);
  EXPECT_EQ(DecodeApply(absl::string_view(bytes).substr(0, kApplyHeaderBytes - 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(DecodeApply(absl::string_view(bytes).substr(0, bytes.size() - 1)).ok());
  EXPECT_EQ(DecodeApply(bytes + "x").status().code(), absl::StatusCode::kInvalidArgument);
  std::string other_format = bytes;
  other_format[0] = 9;
  EXPECT_EQ(DecodeApply(other_format).status().code(), absl::StatusCode::kInvalidArgument);
  // A primary's held lock record goes as a commit record, in the epoch given.
  LogRecord lock = record;
  lock.kind = LogKind::kLock;
  std::string as_commit;
  ASSERT_TRUE(EncodeApplyRequest(ApplyRequest{.sender = 1, .sequence = 1, .watermark = 1}, lock, 5, &as_commit).ok());
  absl::StatusOr<DecodedApply> restamped = DecodeApply(as_commit);
  ASSERT_TRUE(restamped.ok()) << restamped.status();
  EXPECT_EQ(restamped->record.kind, LogKind::kCommit);
  EXPECT_EQ(restamped->record.epoch, 5u);
  EXPECT_EQ(restamped->record.entries, record.entries);
  std::string lock_bytes = as_commit.substr(0, kApplyHeaderBytes);
  ASSERT_TRUE(EncodeLogRecord(lock, &lock_bytes).ok());
  EXPECT_EQ(DecodeApply(lock_bytes).status().code(), absl::StatusCode::kInvalidArgument)
      << "a backup applies commit records only";
}

TEST(RetainedMessagesTest, QueriesAndPagesRoundTripAndRejectDamage) {
  RetainedQuery q;
  q.epoch = 42;
  q.first = 3;
  q.regions = {kHeld, kElsewhere};
  absl::StatusOr<std::string> bytes = EncodeRetainedQuery(q);
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<RetainedQuery> back = DecodeRetainedQuery(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->epoch, 42u);
  EXPECT_EQ(back->first, 3u);
  EXPECT_EQ(back->regions, q.regions);
  EXPECT_FALSE(DecodeRetainedQuery(bytes->substr(0, bytes->size() - 1)).ok());
  EXPECT_FALSE(DecodeRetainedQuery(*bytes + "1234").ok());
  q.regions.assign(kMaxRetainedRegions + 1, kHeld);
  EXPECT_EQ(EncodeRetainedQuery(q).status().code(), absl::StatusCode::kInvalidArgument);

  const LogRecord a = Commit(1, {Write(kHeld, 0, 0, 'a')});
  const LogRecord b = Commit(2, {Write(kHeld, 64, 4, 'b')});
  std::string records;
  ASSERT_TRUE(EncodeLogRecord(a, &records).ok());
  ASSERT_TRUE(EncodeLogRecord(b, &records).ok());
  const std::string page = EncodeRetainedPage(5, 2, records);
  absl::StatusOr<RetainedPage> got = DecodeRetainedPage(page);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->total, 5u);
  ASSERT_EQ(got->records.size(), 2u);
  EXPECT_EQ(got->records[0], a);
  EXPECT_EQ(got->records[1], b);
  EXPECT_FALSE(DecodeRetainedPage(EncodeRetainedPage(1, 2, records)).ok()) << "more records than the total";
  EXPECT_FALSE(DecodeRetainedPage(EncodeRetainedPage(5, 3, records)).ok()) << "fewer records than counted";
  EXPECT_FALSE(DecodeRetainedPage(EncodeRetainedPage(5, 1, records)).ok()) << "bytes after the records";
  EXPECT_FALSE(DecodeRetainedPage(page.substr(0, page.size() - 3)).ok());

  // A restarted primary's reconciliation request: its regions, then the records.
  absl::StatusOr<std::string> reconcile = EncodeReconcile({kHeld, kElsewhere}, 2, records);
  ASSERT_TRUE(reconcile.ok()) << reconcile.status();
  absl::StatusOr<ReconcileRequest> request = DecodeReconcile(*reconcile);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->regions, (std::vector<RegionId>{kHeld, kElsewhere}));
  EXPECT_EQ(request->records, (std::vector<LogRecord>{a, b}));
  EXPECT_FALSE(DecodeReconcile(reconcile->substr(0, reconcile->size() - 1)).ok());
  EXPECT_FALSE(DecodeReconcile(*reconcile + "x").ok());
  EXPECT_FALSE(DecodeReconcile(reconcile->substr(0, 6)).ok()) << "fewer region ids than counted";
  std::string other_format = *reconcile;
  other_format[0] = 9;
  EXPECT_FALSE(DecodeReconcile(other_format).ok());
  EXPECT_FALSE(EncodeReconcile(std::vector<RegionId>(kMaxRetainedRegions + 1, kHeld), 2, records).ok());
}

class BackupApplyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(copies_.Create(kHeld, kRegionBytes, /*primary=*/1).ok()); }

  const char* Object(uint64_t offset) { return copies_.Find(kHeld)->base() + offset; }
  uint64_t Version(uint64_t offset) { return LoadHeaderWord(Object(offset) + kVersionOffset); }
  std::string Content(uint64_t offset) {
    std::string out(64, '\0');
    ReadPayload(Object(offset), offset, out);
    return out;
  }

  alloc::BackupRegions copies_;
  BackupLog log_{&copies_};
};

TEST_F(BackupApplyTest, ARecordAppliesItsEntriesInCopiesHereOnceAndPassesOverTheRest) {
  const LogRecord first = Commit(1, {Write(kHeld, kBase, 0, 'a', LogOp::kAlloc), Write(kElsewhere, 0, 0, 'z'),
                                     Write(kHeld, kBase + 128, 0, 'b', LogOp::kAlloc)});
  absl::StatusOr<size_t> here = log_.Apply(LogRecordView::Of(first));
  ASSERT_TRUE(here.ok()) << here.status();
  EXPECT_EQ(*here, 2u);
  EXPECT_EQ(Version(kBase), NextVersion(0));
  EXPECT_EQ(Content(kBase), std::string(64, 'a'));
  EXPECT_EQ(Content(kBase + 128), std::string(64, 'b'));
  // Sent again (a retry): nothing is missing, nothing moves.
  EXPECT_EQ(*log_.Missing(LogRecordView::Of(first)), 0u);
  here = log_.Apply(LogRecordView::Of(first));
  ASSERT_TRUE(here.ok());
  EXPECT_EQ(*here, 0u);
  EXPECT_EQ(Version(kBase), NextVersion(0)) << "applied twice";
  // The next write of one object, then the old record once more: still not undone.
  ASSERT_TRUE(log_.Apply(LogRecordView::Of(Commit(2, {Write(kHeld, kBase, NextVersion(0), 'c')}))).ok());
  ASSERT_TRUE(log_.Apply(LogRecordView::Of(first)).ok());
  EXPECT_EQ(Content(kBase), std::string(64, 'c'));
  EXPECT_EQ(Version(kBase), NextVersion(NextVersion(0)));
  // One entry applied, one not: only the missing one moves.
  const LogRecord half = Commit(4, {Write(kHeld, kBase, NextVersion(NextVersion(0)), 'd'),
                                    Write(kHeld, kBase + 128, 0, 'b', LogOp::kAlloc)});
  EXPECT_EQ(*log_.Missing(LogRecordView::Of(half)), 1u);
  EXPECT_EQ(*log_.Apply(LogRecordView::Of(half)), 1u);
  EXPECT_EQ(Content(kBase), std::string(64, 'd'));
  EXPECT_EQ(log_.stats().entries_skipped, 1u);
  // Only regions held elsewhere: nothing to do here (a copy still to come).
  here = log_.Apply(LogRecordView::Of(Commit(3, {Write(kElsewhere, 64, 0, 'y')})));
  ASSERT_TRUE(here.ok());
  EXPECT_EQ(*here, 0u);
}

TEST_F(BackupApplyTest, AnEntryThatDoesNotFitItsCopyFailsTheRecordWithNothingApplied) {
  LogEntry past_the_end = Write(kHeld, kRegionBytes - 32, 0, 'x');
  absl::StatusOr<size_t> here = log_.Apply(LogRecordView::Of(Commit(1, {Write(kHeld, kBase, 0, 'a', LogOp::kAlloc), past_the_end})));
  EXPECT_EQ(here.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Version(kBase), 0u) << "nothing applied";
  EXPECT_EQ(log_.Missing(LogRecordView::Of(Commit(1, {past_the_end}))).status().code(), absl::StatusCode::kInvalidArgument);
  LogEntry torn = Write(kHeld, kBase + 256, 0, 'x');
  torn.payload.resize(10);
  EXPECT_EQ(log_.Apply(LogRecordView::Of(Commit(2, {torn}))).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BackupApplyTest, FailoverAppliesOnlyWhatTheCopyLacksInTheRegionsAsked) {
  ASSERT_TRUE(log_.Apply(LogRecordView::Of(Commit(1, {Write(kHeld, kBase, 0, 'a', LogOp::kAlloc)}))).ok());
  // A record this copy never got (its primary died before sending it here), gathered
  // from a survivor, with an entry this copy has already and one elsewhere.
  const LogRecord gathered = Commit(2, {Write(kHeld, kBase, 0, 'a', LogOp::kAlloc), Write(kHeld, kBase + 128, 0, 'n', LogOp::kAlloc),
                                        Write(kElsewhere, 0, 0, 'z')});
  EXPECT_EQ(log_.ApplyMissing(gathered, {kElsewhere}), 0u) << "a region not asked for";
  EXPECT_EQ(Version(kBase + 128), 0u);
  EXPECT_EQ(log_.ApplyMissing(gathered, {kHeld, kElsewhere}), 1u);
  EXPECT_EQ(Content(kBase + 128), std::string(64, 'n'));
  EXPECT_EQ(Version(kBase), NextVersion(0)) << "not applied twice";
  EXPECT_EQ(log_.ApplyMissing(gathered, {kHeld}), 0u) << "idempotent";
}

// A record retained past its use (its stream sent nothing since) names an earlier
// incarnation of its slots than a copy holds once the object was freed, or its block
// carved anew — which starts versions at 0 again, so the version alone took the old
// record for one still to apply, and failover wrote an old object into a new slot.
TEST_F(BackupApplyTest, ARecordOfAnEarlierIncarnationOfTheSlotIsNeverAppliedAgain) {
  const LogRecord old = Commit(1, {Write(kHeld, kBase, 0, 'a', LogOp::kAlloc)});
  ASSERT_TRUE(log_.Apply(LogRecordView::Of(old)).ok());
  // The block is carved anew (ClearSlotHeaders): version 0, a later generation's first
  // incarnation, free.
  char* slot = copies_.Find(kHeld)->base() + kBase;
  StoreHeaderWord(slot + kVersionOffset, 0);
  StoreHeaderWord(slot + kIncarnationOffset, IncarnationWord(uint64_t{3} << 20, false));
  EXPECT_EQ(*log_.Missing(LogRecordView::Of(old)), 0u);
  EXPECT_EQ(log_.ApplyMissing(old, {kHeld}), 0u) << "a stale allocation applied to a new block's slot";
  EXPECT_FALSE(IsAllocated(LoadHeaderWord(slot + kIncarnationOffset)));
  EXPECT_EQ(Version(kBase), 0u);
  // The slot's own next allocation applies.
  LogEntry fresh = Write(kHeld, kBase, 0, 'n', LogOp::kAlloc);
  fresh.incarnation = FatIncarnation(uint64_t{3} << 20);
  EXPECT_EQ(*log_.Apply(LogRecordView::Of(Commit(2, {fresh}))), 1u);
  EXPECT_EQ(Content(kBase), std::string(64, 'n'));
  EXPECT_TRUE(IsAllocated(LoadHeaderWord(slot + kIncarnationOffset)));
}

// A backup's log at restart: which single-machine commit records it keeps for the
// reconciliation of replicas. Node 2 replays; it backs region kHeld of node 1 and is
// the primary of kElsewhere.
class ReplayRetainedTest : public ::testing::Test {
 protected:
  static constexpr NodeId kSelf = 2;
  using Logged = std::pair<storage::NodeLogType, std::string>;

  void Region(RegionId region, NodeId primary) {
    log_.emplace_back(storage::NodeLogType::kRegionCreated,
                      alloc::EncodeRegionCreated({region, kRegionBytes, primary}));
  }
  void Replicated(NodeId sender, uint16_t thread, uint32_t boot, uint64_t sequence, uint64_t watermark,
                  const LogRecord& record) {
    ApplyRequest header{sender, thread, boot, sequence, watermark};
    std::string bytes;
    ASSERT_TRUE(EncodeApplyRequest(header, record, record.epoch, &bytes).ok());
    log_.emplace_back(storage::NodeLogType::kTxReplicated, std::move(bytes));
  }
  void Own(const LogRecord& record) { log_.emplace_back(storage::NodeLogType::kTxApplied, Encoded(record)); }
  void Aborted(uint64_t transaction) {
    log_.emplace_back(storage::NodeLogType::kTxAborted, EncodeTransactionId(transaction));
  }

  absl::StatusOr<ReplayResult> Replay(const std::vector<Logged>& log, ReplayMode mode, alloc::BackupRegions* copies) {
    std::vector<storage::LogRecordView> views;
    for (size_t i = 0; i < log.size(); ++i) {
      views.push_back({storage::TypeByte(log[i].first), log[i].second, i, "test-log"});
    }
    return ReplayNodeLog(views, kSelf, mode, copies);
  }

  static std::vector<uint64_t> Transactions(const std::vector<std::string>& encoded) {
    std::vector<uint64_t> out;
    for (const std::string& e : encoded) out.push_back(TransactionOf(e));
    return out;
  }

  std::vector<Logged> log_;
};

TEST_F(ReplayRetainedTest, KeepsTheRecordsNoWatermarkPassedOfEachSendersLatestBootAndItsOwnUndecided) {
  Region(kHeld, 1);
  Region(kElsewhere, kSelf);
  Replicated(1, 0, 5, 1, 1, Commit(0xA, {Write(kHeld, kBase, 0, 'a')}));
  Replicated(1, 0, 5, 3, 2, Commit(0xC, {Write(kHeld, kBase + 128, 0, 'c')}));  // logged before 2
  Replicated(1, 0, 5, 2, 2, Commit(0xB, {Write(kHeld, kBase + 256, 0, 'b')}));  // 2 passes 1
  Replicated(1, 0, 5, 4, 2, Commit(0xD, {Write(kHeld, kBase + 384, 0, 'd')}));
  Aborted(0xD);                                                                  // refused here
  Replicated(1, 1, 5, 1, 1, Commit(0xF, {Write(kHeld, kBase + 512, 0, 'f')}));  // another thread
  Replicated(1, 0, 4, 9, 1, Commit(0xE, {Write(kHeld, kBase + 640, 0, 'e')}));  // an earlier boot
  Own(Commit(0x10, {Write(kElsewhere, kBase, 0, 'o')}));                         // no decision after it
  Own(Commit(0x11, {Write(kElsewhere, kBase + 128, 0, 'p')}));
  log_.emplace_back(storage::NodeLogType::kTxCommitted, EncodeTransactionId(0x11));

  alloc::BackupRegions copies;
  absl::StatusOr<ReplayResult> r = Replay(log_, ReplayMode::kRestart, &copies);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Transactions(r->retained), (std::vector<uint64_t>{0xC, 0xB, 0xF, 0x10})) << "in log order";
  EXPECT_EQ(r->presumed_committed, std::vector<uint64_t>{0x10});
  // Every record but the aborted one is applied to the copy, retained or not.
  for (uint64_t offset : {kBase, kBase + 128, kBase + 256, kBase + 512, kBase + 640}) {
    EXPECT_EQ(Unlocked(LoadHeaderWord(copies.Find(kHeld)->base() + offset + kVersionOffset)), 4u) << offset;
  }
  EXPECT_EQ(Unlocked(LoadHeaderWord(copies.Find(kHeld)->base() + kBase + 384 + kVersionOffset)), 0u);

  // A checkpoint of that log carries the replicated ones (its own undecided one too, as
  // before); replayed after the checkpoint's images they change nothing and are kept
  // again.
  alloc::BackupRegions scratch;
  absl::StatusOr<ReplayResult> compact = Replay(log_, ReplayMode::kCompact, &scratch);
  ASSERT_TRUE(compact.ok()) << compact.status();
  std::vector<Logged> checkpoint;
  checkpoint.emplace_back(storage::NodeLogType::kRegionCreated,
                          alloc::EncodeRegionCreated({kHeld, kRegionBytes, 1}));
  for (const storage::LogRecordView& v : compact->carried) {
    checkpoint.emplace_back(static_cast<storage::NodeLogType>(v.type), std::string(v.payload));
  }
  ASSERT_EQ(checkpoint.size(), 5u);  // C, B, F and node 2's own 0x10
  alloc::BackupRegions again;
  ASSERT_TRUE(again.Create(kHeld, kRegionBytes, 1).ok());
  std::memcpy(again.Find(kHeld)->base(), copies.Find(kHeld)->base(), kBase + 1024);  // the images
  checkpoint.erase(checkpoint.begin());
  absl::StatusOr<ReplayResult> replayed = Replay(checkpoint, ReplayMode::kRestart, &again);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(Transactions(replayed->retained), (std::vector<uint64_t>{0xC, 0xB, 0xF}))
      << "0x10 names a region this replay does not hold";
  EXPECT_EQ(std::memcmp(again.Find(kHeld)->base(), copies.Find(kHeld)->base(), kBase + 1024), 0);
}

TEST_F(ReplayRetainedTest, ADamagedReplicatedRecordStopsTheReplay) {
  Region(kHeld, 1);
  Replicated(1, 0, 5, 1, 1, Commit(0xA, {Write(kHeld, kBase, 0, 'a')}));
  log_.back().second[0] = 9;  // another format
  alloc::BackupRegions copies;
  EXPECT_EQ(Replay(log_, ReplayMode::kRestart, &copies).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace farm::tx
