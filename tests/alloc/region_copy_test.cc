// The region copy protocol (alloc/region_copy.h) between two messaging nodes: node 1
// sends regions it holds; node 2 runs the AllocService with a recording log.
//   - a copy to a node without one, and over an existing, different copy (another
//     primary, another table, other bytes), leaves the used units equal and the free
//     ones zero; the receiver's log replays (tx/recovery.h), and checkpoints
//     (farm/node/checkpointer.h), to exactly the live copy;
//   - the sender reads only the used units' written pages of a sparse region, skips
//     all-zero chunks, and keeps at most `window` DATA unanswered;
//   - malformed, out-of-place and out-of-bounds requests are refused with a clear error
//     and change nothing; a region the receiver is the primary of is refused.
#include "alloc/region_copy.h"

#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "alloc/alloc_service.h"
#include "alloc/copy_messages.h"
#include "alloc/durable_records.h"
#include "alloc/fixed_environment.h"
#include "alloc/messages.h"
#include "alloc/region_format.h"
#include "alloc/region_ranges.h"
#include "farm/base/mutex.h"
#include "farm/node/checkpointer.h"
#include "farm/node/log_set.h"
#include "farm/storage/file_system.h"
#include "farm/storage/log_files.h"
#include "farm/storage/log_format.h"
#include "farm/storage/node_log_types.h"
#include "farm/storage/record_log.h"
#include "gtest/gtest.h"
#include "tests/support/msg_test_node.h"
#include "tx/recovery.h"

namespace farm::alloc {
namespace {

using storage::NodeLogType;
using storage::TypeByte;
using testing::MsgTestNode;

constexpr NodeId kSender = 1;
constexpr NodeId kReceiver = 2;
constexpr RegionId kRegion = 7;
constexpr uint64_t kBytes = 64 << 20;
constexpr absl::Duration kPromptly = absl::Seconds(30);
const RegionOptions kSmallPages{HugePages::kNone};

// --- The receiver's log: records kept in memory, durable at once or when released. ---

class RecordingLog final : public storage::RecordLog {
 public:
  struct Record {
    uint8_t type;
    std::string payload;
  };

  void Append(uint8_t type, absl::string_view payload, Durable durable) override {
    {
      MutexLock lock(&mu_);
      records_.push_back({type, std::string(payload)});
      if (hold_) {
        held_.push_back(std::move(durable));
        return;
      }
    }
    durable(absl::OkStatus());
  }
  // While held, records wait to be made durable (Release).
  void Hold(bool hold) {
    MutexLock lock(&mu_);
    hold_ = hold;
  }
  // Reports the held records durable, or failed with `status`.
  void Release(const absl::Status& status = absl::OkStatus()) {
    std::vector<Durable> held;
    {
      MutexLock lock(&mu_);
      held.swap(held_);
    }
    for (Durable& d : held) d(status);
  }
  void Add(NodeLogType type, std::string payload) {
    MutexLock lock(&mu_);
    records_.push_back({TypeByte(type), std::move(payload)});
  }
  std::vector<Record> records() const {
    MutexLock lock(&mu_);
    return records_;
  }
  // Forgets the last record: the log a crash before its write leaves.
  void DropLast() {
    MutexLock lock(&mu_);
    records_.pop_back();
  }
  size_t size() const {
    MutexLock lock(&mu_);
    return records_.size();
  }

 private:
  mutable Mutex mu_;
  std::vector<Record> records_ ABSL_GUARDED_BY(mu_);
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Durable> held_ ABSL_GUARDED_BY(mu_);
};

// --- Regions the sender holds ---

SizeClass ClassWithUnits(uint32_t units) {
  for (uint32_t c = 0; c < kSizeClassCount; ++c) {
    if (ClassInfo(static_cast<SizeClass>(c)).block_units == units) return static_cast<SizeClass>(c);
  }
  ADD_FAILURE() << "no size class has blocks of " << units << " units";
  return 0;
}

std::unique_ptr<Region> NewRegion(RegionId id, uint64_t bytes) {
  absl::StatusOr<Region> r = Region::Create(id, bytes, kSmallPages);
  EXPECT_TRUE(r.ok()) << r.status();
  auto region = std::make_unique<Region>(std::move(*r));
  EXPECT_TRUE(FormatRegion(region->base(), id, bytes).ok());
  return region;
}

void AddBlock(char* base, uint32_t first_unit, uint32_t units, uint64_t generation = 1) {
  StoreBlockWord(base, first_unit,
                 BlockState{BlockKind::kSlab, ClassWithUnits(units), units, generation}.Encode());
  for (uint32_t i = 1; i < units; ++i) {
    StoreBlockWord(base, first_unit + i,
                   BlockState{BlockKind::kContinuation, 0, i, generation}.Encode());
  }
}

void Fill(char* at, size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  for (size_t i = 0; i < n; ++i) at[i] = static_cast<char>(random() | 1);  // never zero
}

constexpr uint64_t MiB(uint64_t n) { return n << 20; }

// Blocks at units 3 (1 unit), 10-11 (2 units, bytes across the boundary), 30 (a page
// written and zeroed again: an all-zero chunk), 40 (never written); garbage in the free
// unit 20, which is not copied.
void WriteContent(Region& r, uint32_t seed) {
  char* base = r.base();
  AddBlock(base, 3, 1);
  AddBlock(base, 10, 2);
  AddBlock(base, 30, 1);
  AddBlock(base, 40, 1);
  Fill(base + MiB(3), 5000, seed + 1);
  Fill(base + MiB(3) + 500'000, 70'000, seed + 2);
  Fill(base + MiB(11) - 100, 300, seed + 3);
  Fill(base + MiB(20), 4096, seed + 4);
  Fill(base + MiB(30), 8192, seed + 5);
  std::memset(base + MiB(30), 0, 8192);
}

bool AllZero(const char* p, size_t n) {
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

// The copy equals `sent` in unit 0 and every unit in use there, and is zero elsewhere.
void ExpectCopyOf(const Region& sent, const Region& copy) {
  ASSERT_EQ(sent.size(), copy.size());
  for (uint32_t u = 0; u < UnitsOf(sent.size()); ++u) {
    const uint64_t at = uint64_t{u} * kBlockUnitBytes;
    const bool used =
        u == 0 || BlockState::Decode(LoadBlockWord(sent.base(), u)).kind != BlockKind::kFree;
    if (used) {
      EXPECT_EQ(std::memcmp(sent.base() + at, copy.base() + at, kBlockUnitBytes), 0)
          << "unit " << u;
    } else {
      EXPECT_TRUE(AllZero(copy.base() + at, kBlockUnitBytes))
          << "free unit " << u << " is not zero";
    }
  }
}

void ExpectSameBytes(const Region& a, const Region& b) {
  ASSERT_EQ(a.size(), b.size());
  for (uint64_t at = 0; at < a.size(); at += kBlockUnitBytes) {
    ASSERT_EQ(std::memcmp(a.base() + at, b.base() + at, kBlockUnitBytes), 0)
        << "at unit " << at / kBlockUnitBytes;
  }
}

// --- Two nodes ---

class RegionCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = *FixedEnvironment::Create({kSender, kReceiver}, 1);
    AllocatorOptions o;
    o.self = kReceiver;
    o.region_bytes = 32 << 20;
    o.region = kSmallPages;
    absl::StatusOr<std::unique_ptr<Allocator>> a = Allocator::Create(o, env_.get(), &epochs_);
    ASSERT_TRUE(a.ok()) << a.status();
    allocator_ = std::move(*a);

    MsgTestNode::Options receiver;
    receiver.id = kReceiver;
    receiver.handlers = [this](Messenger& m) {
      absl::StatusOr<std::unique_ptr<AllocService>> s =
          AllocService::Create(&m, allocator_.get(), &backups_, &log_, max_unlogged_copy_bytes_);
      ASSERT_TRUE(s.ok()) << s.status();
      service_ = std::move(*s);
    };
    absl::StatusOr<std::unique_ptr<MsgTestNode>> r = MsgTestNode::Create(receiver);
    ASSERT_TRUE(r.ok()) << r.status();
    receiver_ = std::move(*r);
    MsgTestNode::Options sender;
    sender.id = kSender;
    absl::StatusOr<std::unique_ptr<MsgTestNode>> s = MsgTestNode::Create(sender);
    ASSERT_TRUE(s.ok()) << s.status();
    sender_ = std::move(*s);
    ASSERT_TRUE(sender_->ConnectTo(*receiver_).ok());
  }

  void TearDown() override {
    log_.Hold(false);
    log_.Release();
    if (receiver_ != nullptr && service_ != nullptr) {
      RunInLoop(receiver_->loop(0), [this] { service_->StopThread(0); });
    }
    sender_.reset();
    receiver_.reset();
    service_.reset();
  }

  struct Outcome {
    absl::Status status;
    RegionCopyStats stats;
  };
  std::shared_ptr<std::optional<Outcome>> StartCopy(const Region& region,
                                                    const RegionCopyOptions& options) {
    auto outcome = std::make_shared<std::optional<Outcome>>();
    auto done = std::make_shared<Notification>();
    done_ = done;
    SendRegionCopy(
        sender_->thread(0), kReceiver, region,
        [outcome, done](const absl::Status& s, const RegionCopyStats& stats) {
          EXPECT_FALSE(outcome->has_value()) << "done ran twice";
          *outcome = Outcome{s, stats};
          done->Notify();
        },
        options);
    return outcome;
  }
  Outcome Copy(const Region& region, const RegionCopyOptions& options = {}) {
    std::shared_ptr<std::optional<Outcome>> outcome = StartCopy(region, options);
    EXPECT_TRUE(done_->WaitForNotificationWithTimeout(kPromptly)) << "the copy did not finish";
    return outcome->has_value() ? **outcome
                                : Outcome{absl::DeadlineExceededError("no outcome"), {}};
  }

  // A region holding one block of 1 MiB, filled: the header's chunk and 64 of the
  // block's in 16 KiB chunks.
  static constexpr uint64_t kBlockChunks = 1 + MiB(1) / (16 << 10);
  std::unique_ptr<Region> NewRegionWithABlock() {
    std::unique_ptr<Region> region = NewRegion(kRegion, kBytes);
    AddBlock(region->base(), 3, 1);
    Fill(region->base() + MiB(3), MiB(1), 5);
    return region;
  }
  // Copies `region` in 16 KiB chunks while the receiver's log holds every DATA record
  // (BEGIN made durable): returns once all DATA records are in the log, none durable.
  std::shared_ptr<std::optional<Outcome>> CopyWithDataNotDurable(const Region& region) {
    log_.Hold(true);
    std::shared_ptr<std::optional<Outcome>> outcome = StartCopy(region, {.chunk_bytes = 16 << 10});
    EXPECT_TRUE(testing::WaitUntil([&] { return log_.size() == 1; }));
    log_.Release();  // BEGIN
    EXPECT_TRUE(testing::WaitUntil([&] { return log_.size() == 1 + kBlockChunks; }));
    return outcome;
  }

  // A raw request from the sender's thread; its answer's status.
  absl::Status Call(MsgId id, std::string payload) {
    Notification answered;
    absl::Status result;
    RunInLoop(sender_->loop(0), [&] {
      absl::Status sent = sender_->thread(0).Call(kReceiver, id, payload,
                                                  [&](const absl::Status& s, absl::string_view) {
                                                    result = s;
                                                    answered.Notify();
                                                  });
      if (!sent.ok()) {
        result = sent;
        answered.Notify();
      }
    });
    EXPECT_TRUE(answered.WaitForNotificationWithTimeout(kPromptly));
    return result;
  }

  // The receiver's log replayed into fresh copies (as a restart does); `result` gets what
  // else the replay found.
  std::unique_ptr<BackupRegions> Replay(tx::ReplayResult* result = nullptr) {
    const std::vector<RecordingLog::Record> records = log_.records();
    std::vector<storage::LogRecordView> views;
    for (size_t i = 0; i < records.size(); ++i)
      views.push_back({records[i].type, records[i].payload, i, "recorded"});
    auto copies = std::make_unique<BackupRegions>(kSmallPages);
    absl::StatusOr<tx::ReplayResult> r =
        tx::ReplayNodeLog(views, kReceiver, tx::ReplayMode::kRestart, copies.get());
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok() && result != nullptr) *result = std::move(*r);
    return copies;
  }

  // The receiver's log as segment 0 of a directory, checkpointed, and the checkpoint
  // replayed (`result` as Replay's), followed by `after` as segment 1 (records logged
  // after the checkpoint's prefix).
  std::unique_ptr<BackupRegions> ReplayCheckpoint(tx::ReplayResult* result = nullptr,
                                                  const std::vector<RecordingLog::Record>& after = {}) {
    std::string dir = "/tmp/farm-region-copy-XXXXXX";
    EXPECT_NE(::mkdtemp(dir.data()), nullptr);
    constexpr uint64_t kIdentity = 0x5eed;
    std::unique_ptr<storage::FileSystem> fs = storage::NewPosixFileSystem();
    std::string bytes = storage::EncodeLogHeader(kIdentity);
    for (const RecordingLog::Record& r : log_.records())
      storage::EncodeRecord(r.type, r.payload, &bytes);
    absl::StatusOr<std::unique_ptr<storage::WritableFile>> f =
        fs->OpenForAppend(storage::SegmentPath(dir, 0));
    EXPECT_TRUE(f.ok() && (*f)->Append(bytes).ok() && (*f)->Sync().ok());
    if (!after.empty()) {
      std::string later = storage::EncodeLogHeader(kIdentity);
      for (const RecordingLog::Record& r : after) storage::EncodeRecord(r.type, r.payload, &later);
      absl::StatusOr<std::unique_ptr<storage::WritableFile>> g =
          fs->OpenForAppend(storage::SegmentPath(dir, 1));
      EXPECT_TRUE(g.ok() && (*g)->Append(later).ok() && (*g)->Sync().ok());
    }
    node::CheckpointRequest request;
    request.fs = fs.get();
    request.dir = dir;
    request.identity = kIdentity;
    request.self = kReceiver;
    request.segments = {0};
    request.region_options = kSmallPages;
    absl::StatusOr<node::CheckpointStats> checkpoint = node::BuildCheckpoint(request);
    EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
    absl::StatusOr<node::LogSet> set = node::ReadLogSet(fs.get(), dir, kIdentity, 1, {1});
    EXPECT_TRUE(set.ok()) << set.status();
    auto copies = std::make_unique<BackupRegions>(kSmallPages);
    if (set.ok()) {
      absl::StatusOr<tx::ReplayResult> r =
          tx::ReplayNodeLog(set->records, kReceiver, tx::ReplayMode::kRestart, copies.get());
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok() && result != nullptr) *result = std::move(*r);
    }
    std::filesystem::remove_all(dir);
    return copies;
  }

  size_t Logged(NodeLogType type) const {
    size_t n = 0;
    for (const RecordingLog::Record& r : log_.records()) n += r.type == TypeByte(type);
    return n;
  }

  // The receiver's bound (RegionCopyReceiver); a fixture sets it before SetUp.
  uint64_t max_unlogged_copy_bytes_ = RegionCopyReceiver::kDefaultMaxUnloggedBytes;
  // Declared before the nodes: the handlers use them until the messengers are gone.
  std::unique_ptr<FixedEnvironment> env_;
  EpochManager epochs_;
  std::unique_ptr<Allocator> allocator_;
  BackupRegions backups_{kSmallPages};
  RecordingLog log_;
  std::unique_ptr<AllocService> service_;
  std::unique_ptr<MsgTestNode> receiver_;
  std::unique_ptr<MsgTestNode> sender_;
  std::shared_ptr<Notification> done_;
};

TEST_F(RegionCopyTest, CopiesARegionToANodeWithoutACopy) {
  std::unique_ptr<Region> region = NewRegion(kRegion, kBytes);
  WriteContent(*region, 1);
  const Outcome out = Copy(*region, {.chunk_bytes = 16 << 10});
  ASSERT_TRUE(out.status.ok()) << out.status;

  const Region* copy = backups_.Find(kRegion);
  ASSERT_NE(copy, nullptr);
  ExpectCopyOf(*region, *copy);
  EXPECT_EQ(backups_.CreatorOf(kRegion), kSender);
  EXPECT_EQ(service_->copies_in_progress().in_progress(), 0u);
  EXPECT_GE(out.stats.chunks, 7u);  // 5000 + 70000 bytes, 300 across two pages, the header
  EXPECT_GE(out.stats.zero_chunks, 1u) << "the page written and zeroed again";
  EXPECT_EQ(out.stats.bytes_sent % 4096, 0u);
  EXPECT_LT(out.stats.scanned_bytes, MiB(1)) << "only the pages written in used units";
  EXPECT_EQ(Logged(NodeLogType::kRegionReset), 1u);
  EXPECT_EQ(Logged(NodeLogType::kRegionImage), out.stats.chunks);
  EXPECT_EQ(log_.records().back().type, TypeByte(NodeLogType::kRegionCopied)) << "the copy ends whole, last";

  tx::ReplayResult replay;
  replay.partial_copies = {0};
  std::unique_ptr<BackupRegions> replayed = Replay(&replay);
  ASSERT_NE(replayed->Find(kRegion), nullptr);
  ExpectSameBytes(*replayed->Find(kRegion), *copy);
  EXPECT_EQ(replayed->CreatorOf(kRegion), kSender);
  EXPECT_TRUE(replay.partial_copies.empty());
  replay.partial_copies = {0};
  std::unique_ptr<BackupRegions> checkpointed = ReplayCheckpoint(&replay);
  ASSERT_NE(checkpointed->Find(kRegion), nullptr);
  ExpectSameBytes(*checkpointed->Find(kRegion), *copy);
  EXPECT_TRUE(replay.partial_copies.empty());
}

TEST_F(RegionCopyTest, ACopyTheReceiverStoppedInIsPartialAfterARestartAndAfterACheckpoint) {
  std::unique_ptr<Region> region = NewRegion(kRegion, kBytes);
  WriteContent(*region, 1);
  ASSERT_TRUE(Copy(*region, {.chunk_bytes = 16 << 10}).status.ok());
  const RecordingLog::Record copied = log_.records().back();
  // Stopped before the copy's last record was written: the bytes are all there, but
  // nothing says the copy matched at END.
  log_.DropLast();
  tx::ReplayResult replay;
  std::unique_ptr<BackupRegions> replayed = Replay(&replay);
  ASSERT_NE(replayed->Find(kRegion), nullptr) << "the copy is held, as it was logged";
  EXPECT_EQ(replay.partial_copies, std::vector<RegionId>{kRegion});
  replay.partial_copies.clear();
  std::unique_ptr<BackupRegions> checkpointed = ReplayCheckpoint(&replay);
  ASSERT_NE(checkpointed->Find(kRegion), nullptr);
  EXPECT_EQ(replay.partial_copies, std::vector<RegionId>{kRegion}) << "a checkpoint keeps the copy partial";
  // Its kRegionCopied logged after the checkpoint's prefix still ends it (the checkpoint
  // keeps the copy's number); another copy's does not.
  ASSERT_EQ(copied.type, TypeByte(NodeLogType::kRegionCopied));
  ASSERT_GT(DecodeRegionCreated(copied.payload)->copy, 0u) << "the record names its copy";
  replay.partial_copies.clear();
  (void)ReplayCheckpoint(&replay, {copied});
  EXPECT_TRUE(replay.partial_copies.empty()) << "the copy's own end, after a checkpoint";
  RegionCreated other = *DecodeRegionCreated(copied.payload);
  ++other.copy;
  (void)ReplayCheckpoint(&replay, {{copied.type, EncodeRegionCreated(other)}});
  EXPECT_EQ(replay.partial_copies, std::vector<RegionId>{kRegion}) << "another copy's end, after a checkpoint";
  // Stopped half-way through the images: partial too.
  while (log_.records().back().type == TypeByte(NodeLogType::kRegionImage) && Logged(NodeLogType::kRegionImage) > 2) {
    log_.DropLast();
  }
  replay.partial_copies.clear();
  (void)Replay(&replay);
  EXPECT_EQ(replay.partial_copies, std::vector<RegionId>{kRegion});

  // The node marks such a copy at start: it is not complete until a copy succeeds.
  EXPECT_TRUE(service_->copies_in_progress().Complete(kRegion));
  service_->MarkCopyPartial(kRegion);
  EXPECT_FALSE(service_->copies_in_progress().Complete(kRegion));
  ASSERT_TRUE(Copy(*region, {.chunk_bytes = 16 << 10}).status.ok());
  EXPECT_TRUE(service_->copies_in_progress().Complete(kRegion));
  replay.partial_copies = {0};
  (void)Replay(&replay);
  EXPECT_TRUE(replay.partial_copies.empty()) << "the copy sent again ends whole";

  // Dropped (out of the region's replica set) while its END was answered: the copy's
  // kRegionCopied comes after the drop, and replays as nothing.
  log_.Add(NodeLogType::kRegionDropped, EncodeRegionCreated({kRegion, 0, kReceiver}));
  log_.Add(NodeLogType::kRegionCopied, EncodeRegionCreated({kRegion, kBytes, kSender}));
  replay.partial_copies = {0};
  EXPECT_EQ(Replay(&replay)->Find(kRegion), nullptr);
  EXPECT_TRUE(replay.partial_copies.empty());
}

TEST_F(RegionCopyTest, CopiesOverAnExistingDifferentCopy) {
  // The receiver holds a copy from node 3 with another table and bytes everywhere, as
  // its log says (a region record, block words, an image).
  ASSERT_TRUE(backups_.Create(kRegion, kBytes, 3).ok());
  log_.Add(NodeLogType::kRegionCreated, EncodeRegionCreated({kRegion, kBytes, 3}));
  const uint64_t stale_block[] = {BlockState{BlockKind::kSlab, ClassWithUnits(1), 1, 5}.Encode()};
  ASSERT_TRUE(backups_.Apply(kRegion, 5, stale_block).ok());
  log_.Add(NodeLogType::kBlockWords, EncodeBlockWords(kRegion, 5, stale_block, 1));
  std::string stale(MiB(2), '\0');
  Fill(stale.data(), stale.size(), 99);
  for (uint64_t at : {MiB(3), MiB(5), MiB(20)}) {
    ASSERT_TRUE(backups_.WriteBytes(kRegion, at, stale).ok());
    log_.Add(NodeLogType::kRegionImage, EncodeRegionImage(kRegion, at, stale));
  }
  const Region* held = backups_.Find(kRegion);

  std::unique_ptr<Region> region = NewRegion(kRegion, kBytes);
  WriteContent(*region, 2);
  const Outcome out = Copy(*region);
  ASSERT_TRUE(out.status.ok()) << out.status;
  ASSERT_EQ(backups_.Find(kRegion), held) << "the same Region object";
  ExpectCopyOf(*region, *held);
  EXPECT_EQ(backups_.CreatorOf(kRegion), kSender);

  std::unique_ptr<BackupRegions> replayed = Replay();
  ASSERT_NE(replayed->Find(kRegion), nullptr);
  ExpectSameBytes(*replayed->Find(kRegion), *held);
  EXPECT_EQ(replayed->CreatorOf(kRegion), kSender);
  std::unique_ptr<BackupRegions> checkpointed = ReplayCheckpoint();
  ASSERT_NE(checkpointed->Find(kRegion), nullptr);
  ExpectSameBytes(*checkpointed->Find(kRegion), *held);

  // Again, over the copy it just made, with other contents.
  std::unique_ptr<Region> again = NewRegion(kRegion, kBytes);
  AddBlock(again->base(), 50, 2);
  Fill(again->base() + MiB(50), 100'000, 7);
  ASSERT_TRUE(Copy(*again).status.ok());
  ExpectCopyOf(*again, *held);
  ExpectSameBytes(*Replay()->Find(kRegion), *held);
}

TEST_F(RegionCopyTest, ReadsOnlyTheWrittenPagesOfUsedUnits) {
  constexpr uint64_t kLarge = uint64_t{1} << 30;
  std::unique_ptr<Region> region = NewRegion(kRegion, kLarge);
  AddBlock(region->base(), 700, 2);
  Fill(region->base() + MiB(701) + 4096, 4096, 3);
  Fill(region->base() + MiB(900), 4096, 4);  // a free unit: not read
  const std::vector<ByteRange> written = WrittenRanges(*region);

  const Outcome out = Copy(*region);
  ASSERT_TRUE(out.status.ok()) << out.status;
  EXPECT_EQ(WrittenRanges(*region), written) << "the copy touched pages never written";
  EXPECT_LE(out.stats.scanned_bytes, 64u << 10);
  uint64_t received = 0;
  for (const ByteRange& r : WrittenRanges(*backups_.Find(kRegion))) received += r.end - r.begin;
  EXPECT_LE(received, 64u << 10) << "the receiver's copy stays sparse";
  EXPECT_EQ(std::memcmp(backups_.Find(kRegion)->base() + MiB(701) + 4096,
                        region->base() + MiB(701) + 4096, 4096),
            0);
}

// A receiver that lets two 16 KiB chunks of a copy wait for its log.
class RegionCopyLogBoundTest : public RegionCopyTest {
 protected:
  RegionCopyLogBoundTest() { max_unlogged_copy_bytes_ = 32 << 10; }
};

TEST_F(RegionCopyLogBoundTest, AnswersDataBeforeItIsDurableUpToTheBoundThenAWindowMore) {
  std::unique_ptr<Region> region = NewRegionWithABlock();
  log_.Hold(true);
  std::shared_ptr<std::optional<Outcome>> outcome =
      StartCopy(*region, {.chunk_bytes = 16 << 10, .window = 3});
  ASSERT_TRUE(testing::WaitUntil([&] { return log_.size() == 1; }));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(log_.size(), 1u) << "no DATA before BEGIN is durable";
  log_.Release();
  // Two chunks answered while they wait for the log; then three (the window) that wait.
  ASSERT_TRUE(testing::WaitUntil([&] { return log_.size() == 6; }));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(log_.size(), 6u) << "2 DATA within the bound and 3 unanswered, at most";
  log_.Release();
  ASSERT_TRUE(testing::WaitUntil([&] { return log_.size() == 11; }));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(log_.size(), 11u) << "the same again, once the log caught up";
  EXPECT_FALSE(done_->HasBeenNotified());
  log_.Hold(false);
  log_.Release();
  ASSERT_TRUE(done_->WaitForNotificationWithTimeout(kPromptly));
  ASSERT_TRUE((*outcome)->status.ok()) << (*outcome)->status;
  EXPECT_EQ((*outcome)->stats.chunks, kBlockChunks) << "the header's chunk and the block's";
  ExpectCopyOf(*region, *backups_.Find(kRegion));
  EXPECT_TRUE(service_->copies_in_progress().Complete(kRegion));
}

TEST_F(RegionCopyTest, CopiesAPrimaryStillOwesReplayAndSurviveACheckpoint) {
  // The receiver is the primary of kOwn (it created it) and owes copies of it to nodes 1
  // and 9 (a re-replication), and holds a backup copy of kRegion from node 1.
  constexpr RegionId kOwn = kRegion + 1;
  using Due = absl::flat_hash_map<RegionId, std::vector<NodeId>>;
  log_.Add(NodeLogType::kRegionCreated, EncodeRegionCreated({kOwn, kBytes, kReceiver}));
  log_.Add(NodeLogType::kRegionCreated, EncodeRegionCreated({kRegion, kBytes, kSender}));
  log_.Add(NodeLogType::kRegionCopiesDue, EncodeCopiesDue(kOwn, {kSender, 9}));
  log_.Add(NodeLogType::kRegionCopiesDue, EncodeCopiesDue(kRegion, {9}));  // not its region: ignored
  tx::ReplayResult replay;
  (void)Replay(&replay);
  EXPECT_EQ(replay.copies_due, (Due{{kOwn, {kSender, 9}}}));
  replay = {};
  (void)ReplayCheckpoint(&replay);
  EXPECT_EQ(replay.copies_due, (Due{{kOwn, {kSender, 9}}})) << "a checkpoint carries them";

  // The last list wins; an empty one says none is due.
  log_.Add(NodeLogType::kRegionCopiesDue, EncodeCopiesDue(kOwn, {9}));
  replay = {};
  (void)Replay(&replay);
  EXPECT_EQ(replay.copies_due, (Due{{kOwn, {9}}}));
  log_.Add(NodeLogType::kRegionCopiesDue, EncodeCopiesDue(kOwn, {}));
  replay = {};
  (void)Replay(&replay);
  EXPECT_TRUE(replay.copies_due.empty());
  replay.copies_due[0] = {};
  (void)ReplayCheckpoint(&replay);
  EXPECT_TRUE(replay.copies_due.empty());

  // Handed over (dropped here): nothing is due from this node any more.
  log_.Add(NodeLogType::kRegionCopiesDue, EncodeCopiesDue(kOwn, {9}));
  log_.Add(NodeLogType::kRegionDropped, EncodeRegionCreated({kOwn, 0, kReceiver}));
  replay = {};
  (void)Replay(&replay);
  EXPECT_TRUE(replay.copies_due.empty());

  // A malformed list is damage, not "none due".
  std::string bad = EncodeCopiesDue(kOwn, {9});
  bad.pop_back();
  EXPECT_FALSE(DecodeCopiesDue(bad).ok());
  EXPECT_EQ(DecodeCopiesDue(EncodeCopiesDue(kOwn, {3, 4}))->nodes, (std::vector<NodeId>{3, 4}));
}

TEST_F(RegionCopyTest, EndIsAnsweredOnlyOnceEveryDataIsDurable) {
  std::unique_ptr<Region> region = NewRegionWithABlock();
  // Every DATA is answered (1 MiB is within the default bound): END is sent, and waits.
  std::shared_ptr<std::optional<Outcome>> outcome = CopyWithDataNotDurable(*region);
  ASSERT_FALSE(HasFailure());
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(done_->HasBeenNotified()) << "END answered before the DATA were durable";
  EXPECT_FALSE(service_->copies_in_progress().Complete(kRegion));
  log_.Hold(false);
  log_.Release();
  ASSERT_TRUE(done_->WaitForNotificationWithTimeout(kPromptly));
  ASSERT_TRUE((*outcome)->status.ok()) << (*outcome)->status;
  EXPECT_TRUE(service_->copies_in_progress().Complete(kRegion));
  EXPECT_EQ(service_->copies_in_progress().in_progress(), 0u);
  ExpectCopyOf(*region, *backups_.Find(kRegion));
}

TEST_F(RegionCopyTest, ACopyWhoseDataWasNotLoggedFailsAndIsNotComplete) {
  std::unique_ptr<Region> region = NewRegionWithABlock();
  std::shared_ptr<std::optional<Outcome>> outcome = CopyWithDataNotDurable(*region);
  ASSERT_FALSE(HasFailure());
  log_.Hold(false);
  log_.Release(absl::ResourceExhaustedError("the disk is full"));
  ASSERT_TRUE(done_->WaitForNotificationWithTimeout(kPromptly));
  EXPECT_EQ((*outcome)->status.code(), absl::StatusCode::kResourceExhausted) << (*outcome)->status;
  EXPECT_TRUE(absl::StrContains((*outcome)->status.message(), "the disk is full")) << (*outcome)->status;
  EXPECT_FALSE(service_->copies_in_progress().Complete(kRegion));
  EXPECT_EQ(service_->copies_in_progress().in_progress(), 0u);
  EXPECT_EQ(Logged(NodeLogType::kRegionCopied), 0u);
  tx::ReplayResult replay;
  (void)Replay(&replay);
  EXPECT_EQ(replay.partial_copies, std::vector<RegionId>{kRegion});

  // The sender begins again, and this time the log keeps up.
  const Outcome again = Copy(*region, {.chunk_bytes = 16 << 10});
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_TRUE(service_->copies_in_progress().Complete(kRegion));
  EXPECT_EQ(Logged(NodeLogType::kRegionCopied), 1u);
  ExpectCopyOf(*region, *backups_.Find(kRegion));
}

TEST_F(RegionCopyTest, MalformedAndOutOfPlaceRequestsChangeNothing) {
  constexpr uint64_t kSmall = 32 << 20;
  const std::string begin = EncodeCopyBegin({kRegion, kSmall});
  const std::string chunk(4096, 'x');
  // Before BEGIN: no copy in progress.
  EXPECT_EQ(Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, MiB(2), chunk)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Call(kRegionCopyEndMsgId, EncodeCopyEnd({kRegion, 0, 0})).code(),
            absl::StatusCode::kFailedPrecondition);
  // Malformed BEGIN: short, another tag, a byte too many; a size no region has.
  EXPECT_EQ(Call(kRegionCopyBeginMsgId, begin.substr(0, 6)).code(),
            absl::StatusCode::kInvalidArgument);
  std::string other_tag = begin;
  other_tag[0] = static_cast<char>(kAllocWireFormat + 1);
  EXPECT_EQ(Call(kRegionCopyBeginMsgId, other_tag).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Call(kRegionCopyBeginMsgId, begin + "!").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Call(kRegionCopyBeginMsgId, EncodeCopyBegin({kRegion, 4096})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backups_.Find(kRegion), nullptr);
  EXPECT_EQ(log_.size(), 0u);

  ASSERT_TRUE(Call(kRegionCopyBeginMsgId, begin).ok());
  ASSERT_TRUE(Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, MiB(2), chunk)).ok());
  const Region* copy = backups_.Find(kRegion);
  ASSERT_NE(copy, nullptr);
  const std::string before(copy->base(), copy->size());
  const size_t logged = log_.size();
  // Malformed DATA: short header, another tag; empty; out of bounds; before the last.
  EXPECT_EQ(
      Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, MiB(3), chunk).substr(0, 10)).code(),
      absl::StatusCode::kInvalidArgument);
  std::string data_tag = EncodeRegionImage(kRegion, MiB(3), chunk);
  data_tag[0] = static_cast<char>(kAllocWireFormat + 1);
  EXPECT_EQ(Call(kRegionCopyDataMsgId, data_tag).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, MiB(3), "")).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status past = Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, kSmall - 100, chunk));
  EXPECT_EQ(past.code(), absl::StatusCode::kInvalidArgument) << past;
  EXPECT_NE(past.message().find("run past"), std::string::npos) << past;
  EXPECT_EQ(Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, uint64_t{1} << 63, chunk)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, MiB(1), chunk)).code(),
            absl::StatusCode::kInvalidArgument)
      << "before the end of the previous chunk";
  EXPECT_EQ(Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion + 1, MiB(3), chunk)).code(),
            absl::StatusCode::kFailedPrecondition)
      << "a region with no copy begun";
  // Malformed END; a BEGIN of another size for the copy held.
  EXPECT_EQ(Call(kRegionCopyEndMsgId, EncodeCopyEnd({kRegion, 0, 0}).substr(0, 9)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Call(kRegionCopyBeginMsgId, EncodeCopyBegin({kRegion, kSmall * 2})).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(copy->base(), copy->size()), before)
      << "a refused request wrote into the copy";
  EXPECT_EQ(log_.size(), logged) << "a refused request was logged";
  EXPECT_EQ(service_->copies_in_progress().in_progress(), 1u);
  EXPECT_NE(service_->copies_in_progress().Receiving(kRegion), kInvalidNode);
  EXPECT_EQ(service_->copies_in_progress().Receiving(kRegion + 1), kInvalidNode);

  // END with the wrong count or CRC: DataLoss naming both sides; the copy is over.
  absl::Status mismatch = Call(kRegionCopyEndMsgId, EncodeCopyEnd({kRegion, 8192, 0}));
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kDataLoss) << mismatch;
  EXPECT_NE(mismatch.message().find("sent 8192 bytes"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.message().find("4096 bytes arrived in 1 chunks"), std::string::npos)
      << mismatch;
  EXPECT_EQ(service_->copies_in_progress().in_progress(), 0u);
  EXPECT_EQ(service_->copies_in_progress().Receiving(kRegion), kInvalidNode);
  EXPECT_EQ(Call(kRegionCopyDataMsgId, EncodeRegionImage(kRegion, MiB(4), chunk)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(RegionCopyTest, RefusesARegionTheReceiverIsThePrimaryOf) {
  // The receiver allocates: its first region is its own.
  Notification allocated;
  absl::StatusOr<FatPtr> object;
  RunInLoop(receiver_->loop(0), [&] {
    service_->thread(0)->Allocate(64, {}, [&](absl::StatusOr<FatPtr> p) {
      object = p;
      allocated.Notify();
    });
  });
  ASSERT_TRUE(allocated.WaitForNotificationWithTimeout(kPromptly));
  ASSERT_TRUE(object.ok()) << object.status();
  const RegionId own = object->addr.region();
  const size_t logged = log_.size();

  std::unique_ptr<Region> region = NewRegion(own, 32 << 20);
  const Outcome out = Copy(*region);
  EXPECT_EQ(out.status.code(), absl::StatusCode::kFailedPrecondition) << out.status;
  EXPECT_NE(out.status.message().find("is the primary of region"), std::string::npos) << out.status;
  EXPECT_EQ(backups_.Find(own), nullptr);
  EXPECT_EQ(log_.size(), logged);
}

TEST(RegionRanges, UsedRangesAreTheWrittenPagesOfUsedUnits) {
  std::unique_ptr<Region> region = NewRegion(kRegion, kBytes);
  AddBlock(region->base(), 10, 2);
  Fill(region->base() + MiB(10) + 8192, 100, 1);
  Fill(region->base() + MiB(11) - 4096, 8192, 2);  // the block's two units, one range
  Fill(region->base() + MiB(12), 4096, 3);         // a free unit
  absl::StatusOr<std::vector<ByteRange>> used = UsedRanges(*region);
  ASSERT_TRUE(used.ok()) << used.status();
  ASSERT_EQ(used->size(), 3u);
  EXPECT_EQ((*used)[0].begin, 0u);  // the header and the table's first page
  EXPECT_EQ((*used)[1], (ByteRange{MiB(10) + 8192, MiB(10) + 12288}));
  EXPECT_EQ((*used)[2], (ByteRange{MiB(11) - 4096, MiB(11) + 4096}));

  std::memset(region->base(), 0, 64);
  EXPECT_FALSE(UsedRanges(*region).ok()) << "a region without its header";
}

}  // namespace
}  // namespace farm::alloc
