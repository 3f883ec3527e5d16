// The object codec: payload round trips at every alignment, the writer protocol, and the
// lock-free read rule's verdicts.
#include "farm/base/object_codec.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "farm/base/object_layout.h"
#include "gtest/gtest.h"

namespace farm {
namespace {

// Region-like memory, 64-byte aligned, with one object at `offset`.
class Memory {
 public:
  explicit Memory(size_t bytes) : bytes_(bytes + 64) {}
  char* at(uint64_t offset) { return Base() + offset; }

 private:
  char* Base() {
    const uintptr_t p = reinterpret_cast<uintptr_t>(bytes_.data());
    return bytes_.data() + ((64 - p % 64) % 64);
  }
  std::vector<char> bytes_;
};

void MakeObject(char* object, uint64_t version, uint64_t incarnation) {
  StoreHeaderWord(object + kVersionOffset, version);
  StoreHeaderWord(object + kIncarnationOffset, IncarnationWord(incarnation, true));
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(ObjectCodec, WriteThenReadRoundTripsAtEveryAlignment) {
  std::mt19937_64 rng(11);
  for (uint64_t offset = 64; offset < 64 + 4 * 64; offset += kObjectAlignment) {
    for (uint64_t payload : {0ul, 1ul, 30ul, 46ul, 47ul, 48ul, 49ul, 62ul, 63ul, 64ul, 200ul, 1000ul}) {
      Memory m(offset + 2048);
      char* object = m.at(offset);
      MakeObject(object, 8, 5);
      StoreLineVersions(object, offset, payload, LineVersion(8));
      const std::string data = RandomBytes(rng, payload);
      ASSERT_TRUE(LockObject(object, 8));
      WriteLockedObject(object, offset, 8, std::span<const char>(data.data(), data.size()));
      EXPECT_EQ(LoadHeaderWord(object + kVersionOffset), NextVersion(8));
      ASSERT_EQ(CheckCopy(object, offset, payload, 5, false), CopyCheck::kAccepted)
          << "offset " << offset << " payload " << payload;
      std::string back(payload, '\0');
      ReadPayload(object, offset, std::span<char>(back.data(), back.size()));
      ASSERT_EQ(back, data) << "offset " << offset << " payload " << payload;
      // Nothing written past the object's stored bytes.
      const uint64_t end = StoredBytes(offset, payload);
      for (uint64_t i = end; i < end + 64; ++i) ASSERT_EQ(object[i], 0) << i;
    }
  }
}

TEST(ObjectCodec, TheReadRuleRefusesWhatAReaderMustNotUse) {
  const uint64_t offset = 64 + 48;  // the header ends a line: every payload line has a version
  const uint64_t payload = 300;
  Memory m(offset + 1024);
  char* object = m.at(offset);
  MakeObject(object, 16, 9);
  StoreLineVersions(object, offset, payload, LineVersion(16));
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kAccepted);
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, true), CopyCheck::kInconsistent) << "torn";
  EXPECT_EQ(CheckCopy(object, offset, payload, 8, false), CopyCheck::kWrongIncarnation);

  // A line version from another version of the object: any line.
  const uint64_t lines = LineBoundariesInside(offset, StoredBytes(offset, payload));
  ASSERT_GE(lines, 4u);
  for (uint64_t k = 0; k < lines; ++k) {
    char* v = object + (k + 1) * kCacheLineBytes - 48;  // boundaries at 64-multiples of the region
    const uint16_t saved = LineVersion(16);
    const uint16_t other = LineVersion(20);
    std::memcpy(v, &other, 2);
    EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kInconsistent) << "line " << k;
    std::memcpy(v, &saved, 2);
  }
  ASSERT_TRUE(LockObject(object, 16));
  EXPECT_FALSE(LockObject(object, 16)) << "locked already";
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kLocked);
  UnlockObject(object, offset, payload, 16);
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kAccepted);
  EXPECT_FALSE(LockObject(object, 12)) << "a stale expected version";
  // Shared mode: other lockers are refused, readers still accept the committed bytes;
  // the upgrade refuses them too.
  ASSERT_TRUE(LockObject(object, 16, kSharedLock));
  EXPECT_FALSE(LockObject(object, 16)) << "held in shared mode";
  EXPECT_FALSE(LockObject(object, 16 | kSharedLock, kSharedLock)) << "a locked version";
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kAccepted);
  UpgradeLock(object, 16);
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kLocked);
  UnlockObject(object, offset, payload, 16);
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kAccepted);
  // A read pin: lockers and other pins are refused, readers accept; unpinning restores
  // the version.
  EXPECT_FALSE(PinObject(object, 12)) << "a stale version";
  ASSERT_TRUE(PinObject(object, 16));
  EXPECT_TRUE(IsPinned(LoadHeaderWord(object + kVersionOffset)));
  EXPECT_FALSE(IsWriteLocked(LoadHeaderWord(object + kVersionOffset)));
  EXPECT_FALSE(PinObject(object, 16)) << "pinned already";
  EXPECT_FALSE(LockObject(object, 16)) << "pinned";
  EXPECT_FALSE(LockObject(object, 16, kSharedLock)) << "pinned";
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kAccepted);
  UnpinObject(object, 16);
  EXPECT_EQ(LoadHeaderWord(object + kVersionOffset), 16u);
  // A pinned version is never taken for a one-sided object's word, whatever its count.
  for (uint64_t v : {uint64_t{0}, uint64_t{0xA500}, uint64_t{0xA5FC}, uint64_t{0x1234A5FC} << 20}) {
    EXPECT_FALSE(IsRawHeaderWord(v | kPinned)) << v;
    EXPECT_EQ(Unlocked(v | kPinned), v);
    EXPECT_EQ(NextVersion(v | kPinned), v + 4);
  }
  ASSERT_TRUE(LockObject(object, 16, kSharedLock));
  EXPECT_FALSE(PinObject(object, 16)) << "locked";
  UnlockObject(object, offset, payload, 16);
  StoreHeaderWord(object + kIncarnationOffset, IncarnationWord(10, false));
  EXPECT_EQ(CheckCopy(object, offset, payload, 9, false), CopyCheck::kNotAllocated);
}

TEST(ObjectCodec, LineVersionsSitAtEveryLineBoundaryInsideTheObject) {
  for (uint64_t offset = 0; offset < 64; offset += kObjectAlignment) {
    const uint64_t payload = 500;
    Memory m(1024);
    char* object = m.at(offset);
    // Fill every byte with a marker, then write versions: payload runs must skip them.
    std::vector<char> data(payload, 'p');
    MakeObject(object, 4, 1);
    ASSERT_TRUE(LockObject(object, 4));
    WriteLockedObject(object, offset, 4, std::span<const char>(data.data(), data.size()));
    const uint16_t want = LineVersion(NextVersion(4));
    uint64_t versions = 0;
    for (uint64_t b = 64; b < offset + StoredBytes(offset, payload); b += 64) {
      uint16_t v;
      std::memcpy(&v, object + (b - offset), 2);
      EXPECT_EQ(v, want) << "boundary " << b << " offset " << offset;
      ++versions;
    }
    EXPECT_EQ(versions, LineBoundariesInside(offset, StoredBytes(offset, payload)));
    std::string back(payload, '\0');
    ReadPayload(object, offset, std::span<char>(back.data(), back.size()));
    EXPECT_EQ(back, std::string(payload, 'p'));
  }
}

}  // namespace
}  // namespace farm
