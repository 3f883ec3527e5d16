// The chained layout's formats and arithmetic (kv/chained): doubling splits a bucket
// into b and b + N, directories and roots round-trip, buckets are addressed across
// runs, and a batch's pair delta follows its last successful op.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kv/chained/bucket_format.h"
#include "kv/chained/bucket_table.h"
#include "kv/chained/chained_ops.h"

namespace farm::kv::chained {
namespace {

TEST(ChainedFormatTest, DoublingSplitsABucketInTwo) {
  std::mt19937_64 rng(1);
  for (uint64_t n : {1ull, 3ull, 4ull, 5ull, 1000ull, 12345ull}) {
    for (int i = 0; i < 10000; ++i) {
      const uint64_t h = rng();
      const uint64_t b = BucketIndex(h, n);
      const uint64_t to = BucketIndex(h, 2 * n);
      ASSERT_TRUE(to == b || to == b + n) << h << " in " << n;
    }
  }
}

TEST(ChainedFormatTest, DirectoriesAndRootsRoundTrip) {
  const uint32_t bytes = BucketLayout{}.bucket_bytes();
  std::vector<BucketRun> runs = {{Addr(7, 4096), 3, 144, 5}, {Addr(7, 65536), 4, 144, 1}, {Addr(9, 0), 1, 160, 10}};
  absl::StatusOr<BucketTable> t = BucketTable::Create(runs, bytes);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->buckets(), 16u);
  EXPECT_EQ(t->Bucket(0), (FatPtr{Addr(7, 4096), bytes, 3}));
  EXPECT_EQ(t->Bucket(4), (FatPtr{Addr(7, 4096 + 4 * 144), bytes, 3}));
  EXPECT_EQ(t->Bucket(5), (FatPtr{Addr(7, 65536), bytes, 4}));
  EXPECT_EQ(t->Bucket(15), (FatPtr{Addr(9, 9 * 160), bytes, 1}));
  std::string dir(DirectoryBytes(runs.size()), '\0');
  t->Encode(dir);
  absl::StatusOr<BucketTable> back = BucketTable::Decode(dir, bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  for (uint64_t b = 0; b < 16; ++b) EXPECT_EQ(back->Bucket(b), t->Bucket(b));
  EXPECT_FALSE(BucketTable::Decode(std::string_view(dir).substr(0, 20), bytes).ok());

  std::string root(bytes, '\0');
  EXPECT_FALSE(ReadRoot(root).expanding()) << "a never-written root: the initial table";
  RootState s;
  s.expansions = 3;
  s.current = TableRef{FatPtr{Addr(7, 128), 88, 2}, 40};
  s.next = TableRef{FatPtr{Addr(8, 256), 88, 5}, 80};
  WriteRoot(root, s);
  const RootState r = ReadRoot(root);
  EXPECT_EQ(r.expansions, 3u);
  EXPECT_EQ(r.current, s.current);
  EXPECT_EQ(r.next, s.next);
  EXPECT_TRUE(r.expanding());
}

TEST(ChainedFormatTest, HeadsCarryTheMovedBitAndTheirChain) {
  const BucketLayout layout;
  std::string head(layout.bucket_bytes(), '\0');
  EXPECT_TRUE(CheckBucket(head, layout).ok());
  EXPECT_FALSE(IsMoved(head));
  WriteBucketHeader(head, kMovedFlag, 0, FatPtr{});
  EXPECT_TRUE(IsMoved(head));
  WriteBucketHeader(head, 0, 5, FatPtr{Addr(3, 64), layout.bucket_bytes(), 9});
  EXPECT_FALSE(IsMoved(head));
  EXPECT_EQ(ChainPairs(head), 5u);
  EXPECT_EQ(NextBlock(head), (FatPtr{Addr(3, 64), layout.bucket_bytes(), 9}));
  head[0] = 'x';
  EXPECT_EQ(CheckBucket(head, layout).code(), absl::StatusCode::kInternal);
  EXPECT_FALSE((BucketLayout{0, 16, 32}).Validate().ok());
  EXPECT_FALSE((BucketLayout{17, 16, 32}).Validate().ok());
}

TEST(ChainedFormatTest, PairDeltaFollowsTheLastSuccessfulOp) {
  auto op = [](OpKind k) { return KeyOp{k, "v", 1}; };
  auto ok = [](bool existed) { return KeyOpResult{absl::OkStatus(), existed, 0}; };
  EXPECT_EQ(PairDelta({op(OpKind::kPut)}, {ok(false)}), 1);
  EXPECT_EQ(PairDelta({op(OpKind::kPut)}, {ok(true)}), 0);
  EXPECT_EQ(PairDelta({op(OpKind::kRemove)}, {ok(true)}), -1);
  EXPECT_EQ(PairDelta({op(OpKind::kRemove)}, {ok(false)}), 0);
  EXPECT_EQ(PairDelta({op(OpKind::kPut), op(OpKind::kRemove)}, {ok(false), ok(true)}), 0);
  // A failed increment of an absent key leaves it absent.
  EXPECT_EQ(PairDelta({op(OpKind::kIncrement)}, {KeyOpResult{absl::InvalidArgumentError("x"), false, 0}}), 0);
  EXPECT_EQ(PairDelta({op(OpKind::kIncrement)}, {ok(false)}), 1);
}

}  // namespace
}  // namespace farm::kv::chained
