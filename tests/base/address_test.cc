#include "farm/base/address.h"

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace farm {
namespace {

TEST(AddrTest, SplitsIntoRegionAndOffset) {
  const Addr a(0xDEADBEEF, 0x12345678);
  EXPECT_EQ(a.region(), 0xDEADBEEFu);
  EXPECT_EQ(a.offset(), 0x12345678u);
  EXPECT_EQ(a.raw(), 0xDEADBEEF12345678ull);
  EXPECT_EQ(Addr::FromRaw(a.raw()), a);
}

TEST(AddrTest, DefaultIsNullAndNullIsRegionZero) {
  EXPECT_TRUE(Addr().is_null());
  EXPECT_FALSE(Addr(1, 0).is_null());
  EXPECT_FALSE(Addr(0, 8).is_null());
}

TEST(AddrTest, OrdersByRegionThenOffset) {
  EXPECT_LT(Addr(1, 0xFFFFFFFF), Addr(2, 0));
  EXPECT_LT(Addr(2, 5), Addr(2, 6));
}

TEST(AddrTest, Hashes) {
  absl::flat_hash_set<Addr> set = {Addr(1, 2), Addr(1, 2), Addr(2, 1)};
  EXPECT_EQ(set.size(), 2u);
}

TEST(AddrTest, FormatsReadably) {
  EXPECT_EQ(Addr(7, 0x1c0).ToString(), "r7+0x1c0");
  EXPECT_EQ((FatPtr{Addr(7, 0x40), 100, 3}).ToString(), "r7+0x40[100]#3");
}

TEST(AddrTest, PrivateRegionsAreOutsideTheSharedSpace) {
  EXPECT_FALSE(IsPrivateRegion(1));
  EXPECT_FALSE(IsPrivateRegion(kMaxSharedRegion));
  EXPECT_TRUE(IsPrivateRegion(kFirstPrivateRegion));
}

TEST(FatPtrTest, Is128Bits) {
  static_assert(sizeof(FatPtr) == 16);
  EXPECT_TRUE(FatPtr().is_null());
  EXPECT_EQ((FatPtr{Addr(1, 2), 3, 4}), (FatPtr{Addr(1, 2), 3, 4}));
  EXPECT_NE((FatPtr{Addr(1, 2), 3, 4}), (FatPtr{Addr(1, 2), 3, 5}));
}

}  // namespace
}  // namespace farm
