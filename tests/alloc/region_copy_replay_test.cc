// Replay of the region copy records (alloc/durable_records.h, tx/recovery.h): which
// kRegionCopied ends which copy, and the records' encoding with and without a copy
// number. (The copy protocol itself, end to end: region_copy_test.cc.)
#include <string>
#include <utility>
#include <vector>

#include "alloc/backup_regions.h"
#include "alloc/durable_records.h"
#include "farm/storage/log_format.h"
#include "farm/storage/node_log_types.h"
#include "gtest/gtest.h"
#include "tx/recovery.h"

namespace farm::alloc {
namespace {

constexpr NodeId kReceiver = 2;
constexpr RegionId kRegion = 7;
constexpr uint64_t kBytes = 64 << 20;
const RegionOptions kSmallPages{HugePages::kNone};

// A copy's end names its sender: when another sender's reset replaced the copy while
// the first one's kRegionCopied was being logged, the log reads Reset(A) Reset(B)
// Copied(A), and B's copy must replay partial (it was taken for whole, and could be
// promoted with a half of B's data).
//
// The same for two copies from one sender: the end of the first can be logged (by the
// thread whose log completion ran it) after the reset of the second (by the thread that
// received its BEGIN). The copy numbers tell them apart. Records without a number, as
// logs before them have, go by the sender alone.
TEST(RegionCopyReplayTest, AnEndOfAnotherCopyLeavesTheLastCopyPartial) {
  auto record = [](storage::NodeLogType type, NodeId primary, uint64_t copy) {
    return std::pair<uint8_t, std::string>(storage::TypeByte(type),
                                           EncodeRegionCreated({kRegion, kBytes, primary, copy}));
  };
  constexpr auto kReset = storage::NodeLogType::kRegionReset;
  constexpr auto kCopied = storage::NodeLogType::kRegionCopied;
  struct Case {
    std::string what;
    std::vector<std::pair<uint8_t, std::string>> log;
    bool partial;
  };
  const std::vector<Case> cases = {
      {"another sender's end", {record(kReset, 1, 1), record(kReset, 3, 2), record(kCopied, 1, 1)}, true},
      {"its own end", {record(kReset, 3, 1), record(kCopied, 3, 1)}, false},
      {"the sender's previous copy's end", {record(kReset, 1, 1), record(kReset, 1, 2), record(kCopied, 1, 1)}, true},
      {"its own end after another copy's", {record(kReset, 1, 1), record(kReset, 1, 2), record(kCopied, 1, 1),
                                            record(kCopied, 1, 2)}, false},
      {"an unnumbered end (an older log)", {record(kReset, 1, 0), record(kCopied, 1, 0)}, false},
      {"an unnumbered end of another sender", {record(kReset, 1, 0), record(kReset, 3, 0), record(kCopied, 1, 0)},
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<storage::LogRecordView> views;
    for (size_t i = 0; i < c.log.size(); ++i) views.push_back({c.log[i].first, c.log[i].second, i, "recorded"});
    BackupRegions copies(kSmallPages);
    absl::StatusOr<tx::ReplayResult> r = tx::ReplayNodeLog(views, kReceiver, tx::ReplayMode::kRestart, &copies);
    ASSERT_TRUE(r.ok()) << r.status();
    if (c.partial) {
      EXPECT_EQ(r->partial_copies, std::vector<RegionId>{kRegion}) << "an end of another copy made the last whole";
    } else {
      EXPECT_TRUE(r->partial_copies.empty()) << "its own end makes a copy whole";
    }
  }
}

TEST(RegionCopyReplayTest, RegionRecordsDecodeWithAndWithoutACopyNumber) {
  const std::string numbered = EncodeRegionCreated({.region = 7, .bytes = 1 << 20, .primary = 3, .copy = 9});
  absl::StatusOr<RegionCreated> r = DecodeRegionCreated(numbered);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->region, 7u);
  EXPECT_EQ(r->bytes, uint64_t{1} << 20);
  EXPECT_EQ(r->primary, 3u);
  EXPECT_EQ(r->copy, 9u);
  const std::string plain = EncodeRegionCreated({.region = 7, .bytes = 1 << 20, .primary = 3});
  EXPECT_EQ(plain.size() + 8, numbered.size()) << "records without a copy keep their old size";
  r = DecodeRegionCreated(plain);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->copy, 0u);
  // Anything else is refused, never misread.
  for (const std::string& bad : {plain.substr(0, plain.size() - 1), plain + std::string(4, '\1'),
                                 plain + std::string(8, '\0'), numbered + "x"}) {
    EXPECT_EQ(DecodeRegionCreated(bad).status().code(), absl::StatusCode::kDataLoss) << bad.size();
  }
}

}  // namespace
}  // namespace farm::alloc
