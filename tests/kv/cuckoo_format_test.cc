// The cuckoo layout's entry formats (kv/cuckoo/entry_format.h) and candidate slots
// (kv/cuckoo/cuckoo_map.h), without a cluster: index entries round-trip and are never 0,
// size classes hold the kv limits, and a data entry's checks reject a torn, stale or
// recycled copy.
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "farm/api/wire.h"
#include "gtest/gtest.h"
#include "kv/cuckoo/cuckoo_map.h"
#include "kv/cuckoo/entry_format.h"
#include "kv/key_ops.h"
#include "kv/layout.h"

namespace farm::kv::cuckoo {
namespace {

TEST(CuckooFormatTest, IndexEntriesRoundTripAndAreNeverEmpty) {
  for (const EntryRef ref : {EntryRef{0, 0, 0, 1}, EntryRef{254, 3, kMaxEntryIndex, kVersionMask},
                             EntryRef{7, 2, 123456, 99}}) {
    const uint64_t ite = EncodeIte(ref, 0xab);
    EXPECT_NE(ite, 0u);
    EXPECT_EQ(DecodeIte(ite), ref);
    EXPECT_EQ(IteFilter(ite), 0xab);
  }
}

TEST(CuckooFormatTest, SizeClassesHoldEveryPairWithinTheLimits) {
  EXPECT_EQ(ClassFor(16, 32), 0u);
  EXPECT_EQ(ClassFor(0, kClassBytes[0] - kEntryHeaderBytes), 0u);
  EXPECT_EQ(ClassFor(0, kClassBytes[0] - kEntryHeaderBytes + 1), 1u);
  EXPECT_EQ(ClassFor(kMaxKeyBytes, kMaxValueBytes), kSizeClasses - 1);
  EXPECT_FALSE(ClassFor(kMaxKeyBytes, kClassBytes.back()).has_value());
}

TEST(CuckooFormatTest, AnEntryVerifiesOnlyWhenWholeAndOfItsVersion) {
  std::string bytes(kClassBytes[1], '\0');
  const size_t used =
      EncodeEntry(7, "key", std::string(300, 'v'), std::span<char>(bytes.data(), bytes.size()));
  EntryView view;
  ASSERT_TRUE(ParseEntry(std::span<const char>(bytes.data(), used), kClassBytes[1], view).ok());
  EXPECT_TRUE(view.complete && view.key_read);
  EXPECT_EQ(view.key, "key");
  EXPECT_EQ(StateVersion(view.state), 7u);
  EXPECT_EQ(StateFlags(view.state), 0u) << "written invalid";
  EXPECT_TRUE(ChecksumMatches(bytes, view));
  // A byte of another write (torn), or the value of another incarnation: rejected.
  bytes[kEntryHeaderBytes + 100] = 'x';
  EXPECT_FALSE(ChecksumMatches(bytes, view));
  bytes[kEntryHeaderBytes + 100] = 'v';
  StoreLe<uint64_t>(bytes.data(), StateWord(8, kValid));
  ASSERT_TRUE(ParseEntry(bytes, kClassBytes[1], view).ok());
  EXPECT_FALSE(ChecksumMatches(bytes, view)) << "the checksum covers the version";
  // The flags are not in the checksum: validating or recycling keeps it.
  StoreLe<uint64_t>(bytes.data(), StateWord(7, kRecycled));
  ASSERT_TRUE(ParseEntry(bytes, kClassBytes[1], view).ok());
  EXPECT_TRUE(ChecksumMatches(bytes, view));
  // Lengths over the class (a torn header): never complete.
  StoreLe<uint64_t>(bytes.data() + 8, (uint64_t{5000} << 32) | 5000);
  ASSERT_TRUE(ParseEntry(bytes, kClassBytes[1], view).ok());
  EXPECT_FALSE(view.complete);
}

TEST(CuckooFormatTest, CandidatesAreDistinctAndSpreadOverTheNodes) {
  std::vector<NodeTables> nodes(3);
  for (NodeId n = 0; n < 3; ++n) {
    nodes[n].owner = n + 1;
    nodes[n].threads = 1;
    nodes[n].index_slots = 4;
    nodes[n].index = {RawPtr{Addr(1 + n, 64), 32, 1}};
    for (ClassTable& c : nodes[n].data) {
      c.per_thread = 1;
      c.entries_per_object = 1;
      c.objects = {RawPtr{Addr(10 + n, 64), 65536, 1}};
    }
  }
  absl::StatusOr<CuckooMap> map = CuckooMap::Create(nodes, 3);
  ASSERT_TRUE(map.ok()) << map.status();
  std::set<uint64_t> used;
  for (int k = 0; k < 200; ++k) {
    const std::array<uint64_t, kMaxWays> c = map->Candidates(HashKey(absl::StrCat("k", k)));
    EXPECT_EQ(std::set<uint64_t>(c.begin(), c.end()).size(), 3u);
    for (uint64_t s : c) {
      ASSERT_LT(s, 12u);
      used.insert(s);
      EXPECT_EQ(map->IndexWord(s).offset, (s % 4) * 8);
      EXPECT_EQ(map->IndexWord(s).object.addr.region(), 1 + s / 4);
    }
  }
  EXPECT_EQ(used.size(), 12u);
  EXPECT_FALSE(CuckooMap::Create(nodes, 4).ok());
}

}  // namespace
}  // namespace farm::kv::cuckoo
