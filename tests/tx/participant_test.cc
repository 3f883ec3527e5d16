// The primary's side of two-phase commit on one node's memory: all-or-nothing locks,
// validation, commit through the writer protocol, aborts that leave nothing locked.
#include "tx/participant.h"

#include <string>
#include <vector>

#include "farm/base/object_codec.h"
#include "gtest/gtest.h"
#include "tests/alloc/alloc_test_util.h"

namespace farm::tx {
namespace {

class ParticipantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    thread_ = machine_.NewThread();
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<FatPtr> p = thread_->Alloc(100);
      ASSERT_TRUE(p.ok());
      objects_.push_back(*p);
      Publish(*p, std::string(100, static_cast<char>('a' + i)));
    }
  }

  char* Object(FatPtr p) {
    return machine_.allocator().blocks().FindRegion(p.addr.region())->base() + p.addr.offset();
  }
  uint64_t Version(FatPtr p) { return LoadHeaderWord(Object(p) + kVersionOffset); }
  void Publish(FatPtr p, const std::string& data) {
    const uint64_t v = Version(p);
    ASSERT_TRUE(LockObject(Object(p), v));
    WriteLockedObject(Object(p), p.addr.offset(), v, data);
  }
  std::string Content(FatPtr p) {
    EXPECT_EQ(CheckCopy(Object(p), p.addr.offset(), p.size, p.incarnation, false), CopyCheck::kAccepted);
    std::string out(p.size, '\0');
    ReadPayload(Object(p), p.addr.offset(), out);
    return out;
  }
  LogRecord LockRecord(uint64_t id, std::vector<std::pair<FatPtr, std::string>> writes) {
    LogRecord r;
    r.kind = LogKind::kLock;
    r.transaction = id;
    for (auto& [p, data] : writes) r.entries.push_back({p.addr, Version(p), p.incarnation, LogOp::kWrite, p.size, data});
    return r;
  }

  alloc::testing::SingleMachine machine_;
  std::unique_ptr<alloc::testing::TestThread> thread_;
  std::vector<FatPtr> objects_;
  std::vector<FatPtr> freed_;
  Participant participant_{&machine_.allocator().blocks()};
};

TEST_F(ParticipantTest, LockThenCommitPublishesTheWrites) {
  const FatPtr x = objects_[0], y = objects_[1];
  const uint64_t vx = Version(x);
  ASSERT_TRUE(participant_.Lock(LockRecord(1, {{x, std::string(100, 'X')}, {y, std::string(100, 'Y')}})).ok());
  EXPECT_TRUE(IsLocked(Version(x)));
  EXPECT_EQ(CheckCopy(Object(x), x.addr.offset(), x.size, x.incarnation, false), CopyCheck::kLocked);
  ASSERT_TRUE(participant_.Commit(1, &freed_).ok());
  EXPECT_EQ(Version(x), NextVersion(vx));
  EXPECT_EQ(Content(x), std::string(100, 'X'));
  EXPECT_EQ(Content(y), std::string(100, 'Y'));
  EXPECT_EQ(participant_.locked_transactions(), 0u);
  EXPECT_EQ(participant_.Commit(1, &freed_).code(), absl::StatusCode::kNotFound) << "committed once";
}

TEST_F(ParticipantTest, AFailedLockLeavesNothingLocked) {
  const FatPtr x = objects_[0], y = objects_[1], z = objects_[2];
  ASSERT_TRUE(participant_.Lock(LockRecord(1, {{y, std::string(100, '1')}})).ok());
  const uint64_t vx = Version(x), vz = Version(z);
  // Transaction 2 locks x, then finds y locked: x must be released again.
  absl::Status s = participant_.Lock(LockRecord(2, {{x, std::string(100, '2')}, {y, std::string(100, '2')}, {z, std::string(100, '2')}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(s.message().find("locked by another"), std::string::npos) << s;
  EXPECT_EQ(Version(x), vx);
  EXPECT_EQ(Version(z), vz);
  EXPECT_EQ(participant_.Abort(2).code(), absl::StatusCode::kNotFound);
  // A version that moved since it was read.
  LogRecord stale = LockRecord(3, {{x, std::string(100, 's')}});
  Publish(x, std::string(100, 'n'));
  s = participant_.Lock(stale);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_NE(s.message().find("moved"), std::string::npos) << s;
  EXPECT_FALSE(IsLocked(Version(x)));
  ASSERT_TRUE(participant_.Abort(1).ok());
  EXPECT_FALSE(IsLocked(Version(y)));
  EXPECT_EQ(Content(y), std::string(100, 'b')) << "an abort changes nothing";
}

TEST_F(ParticipantTest, ValidationSeesMovesAndOtherTransactionsLocks) {
  const FatPtr x = objects_[0], y = objects_[1];
  const std::vector<ReadEntry> reads = {{x.addr, Version(x)}, {y.addr, Version(y)}};
  EXPECT_TRUE(participant_.Validate(7, reads).ok());
  ASSERT_TRUE(participant_.Lock(LockRecord(7, {{x, std::string(100, 'q')}})).ok());
  EXPECT_TRUE(participant_.Validate(7, reads).ok()) << "its own lock";
  EXPECT_EQ(participant_.Validate(8, reads).code(), absl::StatusCode::kAborted) << "another's lock";
  ASSERT_TRUE(participant_.Commit(7, &freed_).ok());
  EXPECT_EQ(participant_.Validate(8, reads).code(), absl::StatusCode::kAborted) << "x moved";
  EXPECT_TRUE(participant_.Validate(8, std::vector<ReadEntry>{{y.addr, Version(y)}}).ok());
}

TEST_F(ParticipantTest, BadRecordsAreRefusedBeforeAnythingIsLocked) {
  const FatPtr x = objects_[0];
  const uint64_t vx = Version(x);
  LogRecord r = LockRecord(5, {{x, std::string(100, 'w')}});
  r.entries.push_back({Addr(x.addr.region() + 1, 64), 0, 0, LogOp::kWrite, 1, "?"});
  EXPECT_EQ(participant_.Lock(r).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Version(x), vx);
  LogRecord twice = LockRecord(6, {{x, std::string(100, 'w')}, {x, std::string(100, 'v')}});
  EXPECT_EQ(participant_.Lock(twice).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Version(x), vx);
  LogRecord commit = LockRecord(9, {});
  commit.kind = LogKind::kCommit;
  EXPECT_EQ(participant_.Lock(commit).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(participant_.Lock(LockRecord(10, {{x, std::string(100, 'w')}})).ok());
  EXPECT_EQ(participant_.Lock(LockRecord(10, {})).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(participant_.Abort(10).ok());
}

TEST_F(ParticipantTest, SharedLocksLetReadersInAndKeepWritersOut) {
  const FatPtr x = objects_[0];
  const uint64_t vx = Version(x);
  ASSERT_TRUE(participant_.Lock(LockRecord(20, {{x, std::string(100, 'S')}}), kSharedLock).ok());
  EXPECT_EQ(Content(x), std::string(100, 'a')) << "readers still accept the committed bytes";
  EXPECT_EQ(participant_.Lock(LockRecord(21, {{x, std::string(100, 'T')}})).code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(participant_.Validate(22, std::vector<ReadEntry>{{x.addr, vx}}).code(),
            absl::StatusCode::kAborted);
  EXPECT_TRUE(participant_.Validate(22, std::vector<ReadEntry>{{x.addr, vx}}, /*read_only=*/true).ok())
      << "a read-only transaction is ordered before the shared lock's holder";
  ASSERT_TRUE(participant_.Upgrade(20).ok());
  EXPECT_EQ(participant_.Validate(22, std::vector<ReadEntry>{{x.addr, vx}}, /*read_only=*/true).code(),
            absl::StatusCode::kAborted)
      << "not once it is exclusive: the holder may be past its serialization point";
  ASSERT_TRUE(participant_.Commit(20, &freed_).ok());
  EXPECT_EQ(Content(x), std::string(100, 'S'));
  EXPECT_EQ(Version(x), NextVersion(vx));
}

// Readable commits (participant.h): a transaction that writes x after reading y pins y,
// so that x may stay readable (shared) until it applies.
TEST_F(ParticipantTest, PinnedReadsStayReadableAndKeepWritersOut) {
  const FatPtr x = objects_[0], y = objects_[1], z = objects_[2];
  const uint64_t vx = Version(x), vy = Version(y);
  ASSERT_TRUE(participant_.Lock(LockRecord(40, {{x, std::string(100, 'W')}}), kSharedLock).ok());
  absl::StatusOr<bool> pinned = participant_.PinReads(40, std::vector<ReadEntry>{{x.addr, vx}, {y.addr, vy}});
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_TRUE(*pinned);
  EXPECT_EQ(Version(y), vy | kPinned);
  EXPECT_EQ(participant_.LocksIn(x.addr.region()), 2u) << "x's lock and y's pin";
  // Readers see both as committed; validation accepts the pinned y, not the locked x.
  EXPECT_EQ(Content(x), std::string(100, 'a'));
  EXPECT_EQ(Content(y), std::string(100, 'b'));
  EXPECT_TRUE(participant_.Validate(41, std::vector<ReadEntry>{{y.addr, vy}}).ok());
  EXPECT_EQ(participant_.Validate(41, std::vector<ReadEntry>{{x.addr, vx}}).code(), absl::StatusCode::kAborted);
  // No writer gets y while it is pinned.
  absl::Status s = participant_.Lock(LockRecord(42, {{y, std::string(100, 'Y')}, {z, std::string(100, 'Z')}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(s.message().find("locked by another"), std::string::npos) << s;
  ASSERT_TRUE(participant_.Commit(40, &freed_).ok());
  EXPECT_EQ(Content(x), std::string(100, 'W'));
  EXPECT_EQ(Version(y), vy) << "unpinned, unchanged";
  EXPECT_EQ(participant_.LocksIn(x.addr.region()), 0u);
  ASSERT_TRUE(participant_.Lock(LockRecord(42, {{y, std::string(100, 'Y')}})).ok());
  ASSERT_TRUE(participant_.Commit(42, &freed_).ok());
  EXPECT_EQ(Content(y), std::string(100, 'Y'));
}

TEST_F(ParticipantTest, AReadPinnedByAnotherIsValidButLeavesNoPin) {
  const FatPtr x = objects_[0], y = objects_[1], z = objects_[2];
  const uint64_t vx = Version(x), vy = Version(y), vz = Version(z);
  ASSERT_TRUE(participant_.Lock(LockRecord(50, {{x, std::string(100, '5')}}), kSharedLock).ok());
  ASSERT_TRUE(*participant_.PinReads(50, std::vector<ReadEntry>{{y.addr, vy}}));
  // 51 reads z (pinned first) and y (pinned by 50): valid, but it keeps no pin.
  ASSERT_TRUE(participant_.Lock(LockRecord(51, {}), kSharedLock).ok());
  absl::StatusOr<bool> pinned = participant_.PinReads(51, std::vector<ReadEntry>{{z.addr, vz}, {y.addr, vy}});
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_FALSE(*pinned);
  EXPECT_EQ(Version(z), vz) << "z's pin released";
  EXPECT_EQ(Version(y), vy | kPinned) << "50's pin stays";
  ASSERT_TRUE(participant_.Upgrade(51).ok());
  EXPECT_TRUE(participant_.Validate(51, std::vector<ReadEntry>{{z.addr, vz}, {y.addr, vy}}).ok());
  ASSERT_TRUE(participant_.Commit(51, &freed_).ok());
  EXPECT_EQ(Version(y), vy | kPinned) << "51's commit leaves 50's pin alone";
  ASSERT_TRUE(participant_.Abort(50).ok());
  EXPECT_EQ(Version(x), vx);
  EXPECT_EQ(Version(y), vy) << "an abort releases the pins";
  EXPECT_EQ(participant_.PinReads(50, std::vector<ReadEntry>{}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ParticipantTest, AnInvalidReadPinsNothing) {
  const FatPtr x = objects_[0], y = objects_[1], z = objects_[2];
  const uint64_t vy = Version(y), vz = Version(z);
  ASSERT_TRUE(participant_.Lock(LockRecord(60, {{x, std::string(100, '6')}}), kSharedLock).ok());
  Publish(z, std::string(100, 'n'));  // z moves after it was read
  absl::StatusOr<bool> pinned = participant_.PinReads(60, std::vector<ReadEntry>{{y.addr, vy}, {z.addr, vz}});
  EXPECT_EQ(pinned.status().code(), absl::StatusCode::kAborted) << pinned.status();
  EXPECT_NE(pinned.status().message().find("moved"), std::string::npos) << pinned.status();
  EXPECT_EQ(Version(y), vy) << "y's pin released";
  // Locked by another: invalid too.
  ASSERT_TRUE(participant_.Lock(LockRecord(61, {{y, std::string(100, '7')}}), kSharedLock).ok());
  ASSERT_TRUE(participant_.Abort(60).ok());
  ASSERT_TRUE(participant_.Lock(LockRecord(60, {{x, std::string(100, '6')}}), kSharedLock).ok());
  pinned = participant_.PinReads(60, std::vector<ReadEntry>{{y.addr, vy}});
  EXPECT_EQ(pinned.status().code(), absl::StatusCode::kAborted) << pinned.status();
  EXPECT_NE(pinned.status().message().find("locked by another"), std::string::npos) << pinned.status();
  ASSERT_TRUE(participant_.Abort(60).ok());
  ASSERT_TRUE(participant_.Abort(61).ok());
  EXPECT_EQ(Version(y), vy);
}

TEST_F(ParticipantTest, FreedObjectsAndNewIncarnations) {
  const FatPtr x = objects_[0], y = objects_[1];
  // Free x unread (any version) and give y a new incarnation.
  LogRecord r;
  r.kind = LogKind::kLock;
  r.transaction = 30;
  r.entries.push_back({x.addr, kAnyVersion, x.incarnation, LogOp::kFree, x.size, ""});
  r.entries.push_back({y.addr, Version(y), y.incarnation, LogOp::kWriteNewIncarnation, y.size,
                       std::string(100, 'N')});
  ASSERT_TRUE(participant_.Lock(r).ok());
  ASSERT_TRUE(participant_.Commit(30, &freed_).ok());
  ASSERT_EQ(freed_.size(), 1u);
  EXPECT_EQ(freed_[0], x);
  EXPECT_FALSE(IsLocked(Version(x)));
  EXPECT_EQ(CheckCopy(Object(y), y.addr.offset(), y.size, y.incarnation, false),
            CopyCheck::kWrongIncarnation);
  FatPtr y2 = y;
  ++y2.incarnation;
  EXPECT_EQ(CheckCopy(Object(y2), y2.addr.offset(), y2.size, y2.incarnation, false), CopyCheck::kAccepted);
  // A lock through the old incarnation is refused and leaves y unlocked.
  EXPECT_EQ(participant_.Lock(LockRecord(31, {{y, std::string(100, 'o')}})).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(IsLocked(Version(y)));
}

}  // namespace
}  // namespace farm::tx
