// Backup copies: block-table entries applied in any order converge to the primary's,
// a missed release never leaves a table the recovery scan refuses, bad entries are
// refused whole.
#include "alloc/backup_regions.h"

#include <string>
#include <vector>

#include "alloc/region_format.h"
#include "alloc/scan.h"
#include "gtest/gtest.h"

namespace farm::alloc {
namespace {

constexpr RegionId kRegion = 7;
constexpr uint64_t kBytes = 32 << 20;

SizeClass ClassWithUnits(uint32_t units) {
  for (uint32_t c = 0; c < kSizeClassCount; ++c) {
    if (ClassInfo(static_cast<SizeClass>(c)).block_units == units) return static_cast<SizeClass>(c);
  }
  return 0;
}

std::vector<uint64_t> Block(SizeClass c, uint64_t generation) {
  std::vector<uint64_t> words = {BlockState{BlockKind::kSlab, c, ClassInfo(c).block_units, generation}.Encode()};
  for (uint32_t i = 1; i < ClassInfo(c).block_units; ++i) {
    words.push_back(BlockState{BlockKind::kContinuation, 0, i, generation}.Encode());
  }
  return words;
}

std::vector<uint64_t> Release(SizeClass c, uint64_t generation) {
  return std::vector<uint64_t>(ClassInfo(c).block_units,
                               BlockState{BlockKind::kFree, 0, 0, generation}.Encode());
}

BlockState At(const BackupRegions& b, uint32_t unit) {
  return BlockState::Decode(LoadBlockWord(b.Find(kRegion)->base(), unit));
}

TEST(BackupRegions, CreateIsIdempotentAndChecksSizes) {
  BackupRegions b(RegionOptions{HugePages::kNone});
  ASSERT_TRUE(b.Create(kRegion, kBytes, 1).ok());
  EXPECT_TRUE(b.Create(kRegion, kBytes, 1).ok());
  EXPECT_EQ(b.Create(kRegion, kBytes * 2, 1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(b.Create(8, 4096, 1).code(), absl::StatusCode::kInvalidArgument);
  absl::Status other = b.Create(kRegion, kBytes, 2);
  EXPECT_EQ(other.code(), absl::StatusCode::kAlreadyExists) << "another primary's region of that id";
  EXPECT_NE(other.message().find("created by node 1"), std::string::npos) << other;
  EXPECT_TRUE(CheckRegionHeader(b.Find(kRegion)->base(), kRegion, kBytes).ok());
  EXPECT_EQ(b.Apply(99, 1, Block(0, 1)).code(), absl::StatusCode::kNotFound);
}

TEST(BackupRegions, OutOfOrderEntriesConverge) {
  BackupRegions b(RegionOptions{HugePages::kNone});
  ASSERT_TRUE(b.Create(kRegion, kBytes, 1).ok());
  const SizeClass c = ClassWithUnits(1);
  // The primary: carve (gen 1), release (gen 1), carve again (gen 2). The backup gets
  // them as carve 2, release 1, carve 1.
  ASSERT_TRUE(b.Apply(kRegion, 3, Block(c, 2)).ok());
  ASSERT_TRUE(b.Apply(kRegion, 3, Release(c, 1)).ok());
  ASSERT_TRUE(b.Apply(kRegion, 3, Block(c, 1)).ok());
  EXPECT_EQ(At(b, 3), BlockState::Decode(Block(c, 2)[0]));
  // A release of the same generation wins over its carve, whatever the order.
  ASSERT_TRUE(b.Apply(kRegion, 3, Release(c, 2)).ok());
  ASSERT_TRUE(b.Apply(kRegion, 3, Block(c, 2)).ok());
  EXPECT_EQ(At(b, 3).kind, BlockKind::kFree);
}

TEST(BackupRegions, AMissedReleaseLeavesNoHalfBlock) {
  BackupRegions b(RegionOptions{HugePages::kNone});
  ASSERT_TRUE(b.Create(kRegion, kBytes, 1).ok());
  const SizeClass two = ClassWithUnits(2), one = ClassWithUnits(1);
  ASSERT_NE(two, 0);
  ASSERT_TRUE(b.Apply(kRegion, 1, Block(two, 1)).ok());
  // The release of units 1-2 never arrives; the primary carves a 1-unit block at 2.
  ASSERT_TRUE(b.Apply(kRegion, 2, Block(one, 2)).ok());
  absl::StatusOr<RegionScan> scan = ScanRegion(b.Find(kRegion)->base(), kRegion, kBytes);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(At(b, 1).kind, BlockKind::kFree);
  ASSERT_EQ(scan->blocks.size(), 1u);
  EXPECT_EQ(scan->blocks[0].first_unit, 2u);
  // And at the head: a new block at unit 1 over the old head frees the old tail.
  ASSERT_TRUE(b.Apply(kRegion, 5, Block(two, 1)).ok());
  ASSERT_TRUE(b.Apply(kRegion, 5, Block(one, 2)).ok());
  EXPECT_EQ(At(b, 6).kind, BlockKind::kFree);
  EXPECT_TRUE(ScanRegion(b.Find(kRegion)->base(), kRegion, kBytes).ok());
}

TEST(BackupRegions, AnInvalidEntryIsRefusedWhole) {
  BackupRegions b(RegionOptions{HugePages::kNone});
  ASSERT_TRUE(b.Create(kRegion, kBytes, 1).ok());
  std::vector<uint64_t> words = Block(0, 1);
  words.push_back(uint64_t{9} << 60);  // unknown kind
  EXPECT_EQ(b.Apply(kRegion, 1, words).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(At(b, 1).kind, BlockKind::kFree) << "nothing applied";
  EXPECT_FALSE(b.Apply(kRegion, 31, Block(ClassWithUnits(2), 1)).ok()) << "past the end";
  EXPECT_FALSE(b.Apply(kRegion, 0, Block(0, 1)).ok()) << "the metadata unit";
}

TEST(BackupRegions, ResetEmptiesTheSameCopyForANewPrimary) {
  BackupRegions b(RegionOptions{HugePages::kNone});
  ASSERT_TRUE(b.Reset(kRegion, kBytes, 1).ok()) << "creates a copy not held";
  const Region* copy = b.Find(kRegion);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(b.CreatorOf(kRegion), 1);
  ASSERT_TRUE(b.Apply(kRegion, 3, Block(ClassWithUnits(1), 1)).ok());
  ASSERT_TRUE(b.WriteBytes(kRegion, 3 << 20, std::string(5000, 'x')).ok());

  ASSERT_TRUE(b.Reset(kRegion, kBytes, 2).ok());
  EXPECT_EQ(b.Find(kRegion), copy) << "the same Region object";
  EXPECT_EQ(b.CreatorOf(kRegion), 2);
  EXPECT_TRUE(CheckRegionHeader(copy->base(), kRegion, kBytes).ok()) << "formatted afresh";
  EXPECT_EQ(At(b, 3).kind, BlockKind::kFree);
  EXPECT_EQ(copy->base()[(3 << 20) + 100], 0);
  EXPECT_TRUE(ScanRegion(copy->base(), kRegion, kBytes).ok());

  EXPECT_EQ(b.Reset(kRegion, kBytes * 2, 3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(b.CreatorOf(kRegion), 2) << "a refused reset changes nothing";
  EXPECT_EQ(b.Reset(8, 4096, 1).code(), absl::StatusCode::kInvalidArgument);
}

TEST(BackupRegions, WriteBytesStaysInsideTheCopy) {
  BackupRegions b(RegionOptions{HugePages::kNone});
  ASSERT_TRUE(b.Create(kRegion, kBytes, 1).ok());
  EXPECT_EQ(b.WriteBytes(99, 0, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b.WriteBytes(kRegion, kBytes - 1, "xy").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.WriteBytes(kRegion, ~uint64_t{0}, "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.Find(kRegion)->base()[kBytes - 1], 0) << "nothing written";
  ASSERT_TRUE(b.WriteBytes(kRegion, kBytes - 2, "xy").ok());
  EXPECT_EQ(std::string(b.Find(kRegion)->base() + kBytes - 2, 2), "xy");
}

}  // namespace
}  // namespace farm::alloc
