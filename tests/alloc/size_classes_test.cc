// Size classes, object layout geometry and the region format.
#include "alloc/size_classes.h"

#include <cstring>
#include <random>
#include <vector>

#include "alloc/region_format.h"
#include "farm/base/object_layout.h"
#include "gtest/gtest.h"

namespace farm::alloc {
namespace {

TEST(SizeClasses, TableShape) {
  const auto& slots = SlotSizes();
  EXPECT_EQ(slots.size(), 256u);
  EXPECT_EQ(slots.front(), 64u);
  EXPECT_EQ(slots.back(), 1u << 20);
  for (size_t i = 1; i < slots.size(); ++i) {
    EXPECT_GT(slots[i], slots[i - 1]);
    EXPECT_EQ(slots[i] % kObjectAlignment, 0u) << i;
  }
}

TEST(SizeClasses, FragmentationMeetsThePapersFigures) {
  const Fragmentation all = FragmentationOver(64, kMaxSlotBytes);
  EXPECT_LE(all.average, 0.018) << "average over every size 64 B..1 MiB";
  const Fragmentation above = FragmentationOver(448, kMaxSlotBytes);
  EXPECT_LE(above.maximum, 0.036) << "at size " << above.worst_size;
  // Below 448 B, 16-byte granularity dominates: the worst case is one byte past a class.
  EXPECT_NEAR(all.maximum, 15.0 / 80.0, 1e-9);
  EXPECT_EQ(all.worst_size, 65u);
}

TEST(SizeClasses, SmallestClassThatFits) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> sizes;
  for (uint64_t s = 0; s <= 20000; ++s) sizes.push_back(s);
  for (int i = 0; i < 20000; ++i) sizes.push_back(rng() % (MaxPayloadBytes() + 1));
  for (uint64_t payload : sizes) {
    absl::StatusOr<SizeClass> c = ClassForPayload(payload);
    ASSERT_TRUE(c.ok()) << payload;
    const uint64_t need = MaxStoredBytes(payload);
    ASSERT_GE(ClassInfo(*c).slot_bytes, need) << payload;
    if (*c > 0) {
      ASSERT_LT(ClassInfo(*c - 1).slot_bytes, need) << payload;
    }
  }
}

TEST(SizeClasses, LargestPayload) {
  EXPECT_LE(MaxStoredBytes(MaxPayloadBytes()), kMaxSlotBytes);
  EXPECT_GT(MaxStoredBytes(MaxPayloadBytes() + 1), kMaxSlotBytes);
  absl::StatusOr<SizeClass> too_big = ClassForPayload(MaxPayloadBytes() + 1);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(too_big.status().message().find("larger than"), std::string::npos);
}

TEST(SizeClasses, BlocksHoldWholeSlotsWithSmallTails) {
  for (uint32_t c = 0; c < kSizeClassCount; ++c) {
    const SizeClassInfo& info = ClassInfo(static_cast<SizeClass>(c));
    ASSERT_GE(info.block_units, 1u);
    ASSERT_LE(info.block_units, kMaxBlockUnits);
    const uint64_t block = info.block_units * kBlockUnitBytes;
    ASSERT_EQ(info.slots, block / info.slot_bytes);
    ASSERT_GE(info.slots, 1u);
    // Small classes fit a 1 MiB block with at most one slot of tail.
    if (info.slot_bytes * 64 <= kBlockUnitBytes) {
      EXPECT_EQ(info.block_units, 1u) << c;
    }
  }
}

// Lays an object out byte by byte: header, then payload bytes skipping the 2 bytes at
// every 64-byte boundary after the start.
uint64_t SimulatedStoredBytes(uint64_t offset, uint64_t payload) {
  uint64_t at = offset + kObjectHeaderBytes;
  for (uint64_t placed = 0; placed < payload;) {
    if (at % kCacheLineBytes == 0 && at != offset) {
      at += kLineVersionBytes;
      continue;
    }
    ++at;
    ++placed;
  }
  return at - offset;
}

TEST(ObjectLayout, StoredBytesMatchesTheLayout) {
  for (uint64_t offset = 0; offset < 256; offset += kObjectAlignment) {
    for (uint64_t payload = 0; payload < 700; ++payload) {
      ASSERT_EQ(StoredBytes(offset, payload), SimulatedStoredBytes(offset, payload))
          << "offset " << offset << " payload " << payload;
      ASSERT_LE(StoredBytes(offset, payload), MaxStoredBytes(payload));
    }
  }
}

TEST(ObjectLayout, IncarnationWord) {
  const uint64_t w = IncarnationWord(41, true);
  EXPECT_TRUE(IsAllocated(w));
  EXPECT_EQ(IncarnationOf(w), 41u);
  EXPECT_FALSE(IsAllocated(IncarnationWord(42, false)));
  EXPECT_EQ(FatIncarnation((uint64_t{1} << 40) + 5), 5u);
}

TEST(RegionFormat, BlockStateRoundTrips) {
  const BlockState s{BlockKind::kSlab, 200, 3, (uint64_t{1} << 40) - 1};
  EXPECT_EQ(BlockState::Decode(s.Encode()), s);
  const BlockState c{BlockKind::kContinuation, 0, 2, 17};
  EXPECT_EQ(BlockState::Decode(c.Encode()), c);
}

TEST(RegionFormat, HeaderChecks) {
  std::vector<char> memory(kBlockTableOffset + 8 * 32, 0);
  const uint64_t bytes = 32 * kBlockUnitBytes;
  ASSERT_TRUE(FormatRegion(memory.data(), 9, bytes).ok());
  EXPECT_TRUE(CheckRegionHeader(memory.data(), 9, bytes).ok());
  EXPECT_EQ(CheckRegionHeader(memory.data(), 10, bytes).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(CheckRegionHeader(memory.data(), 9, bytes * 2).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(BlockState::Decode(LoadBlockWord(memory.data(), 0)).kind, BlockKind::kMetadata);
  RegionHeader h;
  std::memcpy(&h, memory.data(), sizeof(h));
  h.format = 99;
  std::memcpy(memory.data(), &h, sizeof(h));
  absl::Status future = CheckRegionHeader(memory.data(), 9, bytes);
  EXPECT_EQ(future.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(future.message().find("format 99"), std::string::npos) << future;
  memory[0] = 'X';
  EXPECT_EQ(CheckRegionHeader(memory.data(), 9, bytes).code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(FormatRegion(memory.data(), 9, kBlockUnitBytes).ok());
  EXPECT_FALSE(FormatRegion(memory.data(), 9, 3 * kBlockUnitBytes + 4096).ok());
}

TEST(RegionFormat, ValidateBlockWord) {
  const uint32_t units = 16;
  EXPECT_TRUE(ValidateBlockWord(1, BlockState{BlockKind::kFree, 0, 0, 3}.Encode(), units).ok());
  const SizeClass small = 0;
  EXPECT_TRUE(ValidateBlockWord(1, BlockState{BlockKind::kSlab, small, 1, 1}.Encode(), units).ok());
  // Wrong length for the class, past the end, unit 0, bad kinds, bad continuations.
  EXPECT_FALSE(ValidateBlockWord(1, BlockState{BlockKind::kSlab, small, 2, 1}.Encode(), units).ok());
  SizeClass multi = 0;
  while (ClassInfo(multi).block_units == 1) ++multi;
  const uint32_t multi_units = ClassInfo(multi).block_units;
  EXPECT_TRUE(ValidateBlockWord(1, BlockState{BlockKind::kSlab, multi, multi_units, 1}.Encode(), units).ok());
  EXPECT_FALSE(ValidateBlockWord(units - 1, BlockState{BlockKind::kSlab, multi, multi_units, 1}.Encode(),
                                 units).ok());
  EXPECT_FALSE(ValidateBlockWord(0, BlockState{BlockKind::kFree, 0, 0, 0}.Encode(), units).ok());
  EXPECT_FALSE(ValidateBlockWord(16, BlockState{BlockKind::kFree, 0, 0, 0}.Encode(), units).ok());
  EXPECT_FALSE(ValidateBlockWord(3, BlockState{BlockKind::kMetadata, 0, 1, 1}.Encode(), units).ok());
  EXPECT_FALSE(ValidateBlockWord(3, uint64_t{9} << 60, units).ok());
  EXPECT_TRUE(ValidateBlockWord(3, BlockState{BlockKind::kContinuation, 0, 2, 1}.Encode(), units).ok());
  EXPECT_FALSE(ValidateBlockWord(3, BlockState{BlockKind::kContinuation, 0, 4, 1}.Encode(), units).ok());
  EXPECT_FALSE(ValidateBlockWord(3, BlockState{BlockKind::kContinuation, 0, 0, 1}.Encode(), units).ok());
}

}  // namespace
}  // namespace farm::alloc
