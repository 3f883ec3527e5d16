#include "farm/base/region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace farm {
namespace {

// Resident set size of this process in bytes, from /proc/self/statm.
uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST(RegionTest, TwoGigabyteRegionIsReservedNotCommitted) {
  const uint64_t before = ResidentBytes();
  absl::StatusOr<Region> r = Region::Create(1, kDefaultRegionSize);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), kDefaultRegionSize);
  // Touch one byte at each end: a page or a huge page each, nowhere near 2 GB.
  r->base()[0] = 1;
  r->base()[r->size() - 1] = 2;
  EXPECT_LT(ResidentBytes() - before, uint64_t{64} << 20);
  EXPECT_EQ(r->base()[0], 1);
  EXPECT_EQ(r->base()[r->size() - 1], 2);
}

TEST(RegionTest, StartsZeroed) {
  absl::StatusOr<Region> r = Region::Create(1, 1 << 20);
  ASSERT_TRUE(r.ok());
  for (uint64_t i = 0; i < r->size(); i += 4096) ASSERT_EQ(r->base()[i], 0);
}

TEST(RegionTest, RejectsBadSizes) {
  EXPECT_EQ(Region::Create(1, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Region::Create(1, 1000).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Region::Create(1, kMaxRegionSize + 4096).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Region::Create(1, kMaxRegionSize).ok());
}

TEST(RegionTest, AttachSeesTheSameMemory) {
  absl::StatusOr<Region> r = Region::Create(3, 1 << 20);
  ASSERT_TRUE(r.ok());
  absl::StatusOr<Region> view = Region::Attach(3, UniqueFd(::dup(r->fd())), r->size());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_NE(view->base(), r->base());
  std::strcpy(r->base() + 100, "shared");
  EXPECT_STREQ(view->base() + 100, "shared");
}

TEST(RegionTest, AttachRefusesMoreThanTheFdHolds) {
  absl::StatusOr<Region> r = Region::Create(3, 1 << 20);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Region::Attach(3, UniqueFd(::dup(r->fd())), 2 << 20).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RegionTest, ContainsIsOverflowSafe) {
  absl::StatusOr<Region> r = Region::Create(1, 1 << 20);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->Contains(0, 1 << 20));
  EXPECT_TRUE(r->Contains(1 << 20, 0));
  EXPECT_FALSE(r->Contains(1, 1 << 20));
  EXPECT_FALSE(r->Contains(8, ~uint64_t{0}));
  EXPECT_FALSE(r->Contains(~uint64_t{0}, 8));
}

TEST(RegionTest, DiscardZeroesPagesAndChecksAlignment) {
  absl::StatusOr<Region> r = Region::Create(1, 1 << 20);
  ASSERT_TRUE(r.ok());
  std::memset(r->base(), 7, 3 * 4096);
  ASSERT_TRUE(r->Discard(4096, 4096).ok());
  EXPECT_EQ(r->base()[0], 7);
  EXPECT_EQ(r->base()[4096], 0);
  EXPECT_EQ(r->base()[8191], 0);
  EXPECT_EQ(r->base()[8192], 7);
  EXPECT_EQ(r->Discard(1, 4096).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r->Discard(0, 2 << 20).code(), absl::StatusCode::kInvalidArgument);
}

TEST(RegionTest, MoveKeepsTheMapping) {
  absl::StatusOr<Region> r = Region::Create(9, 1 << 20);
  ASSERT_TRUE(r.ok());
  char* base = r->base();
  Region moved = std::move(*r);
  EXPECT_EQ(moved.base(), base);
  EXPECT_EQ(moved.id(), 9u);
  EXPECT_EQ(r->base(), nullptr);  // NOLINT(bugprone-use-after-move): documented state
}

}  // namespace
}  // namespace farm
