#include "farm/base/published_map.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace farm {
namespace {

TEST(PublishedMapTest, FindsWhatUpdatesPublish) {
  PublishedMap<uint32_t, const int*> map;
  const int a = 1, b = 2;
  EXPECT_EQ(map.Find(7), nullptr);
  EXPECT_FALSE(map.Contains(7));
  map.Update([&](auto& m) { m[7] = &a; });
  EXPECT_EQ(map.Find(7), &a);
  EXPECT_TRUE(map.Contains(7));
  const bool inserted = map.Update([&](auto& m) { return m.emplace(8, &b).second; });
  EXPECT_TRUE(inserted);
  EXPECT_EQ(map.Size(), 2u);
  map.Update([](auto& m) { m.erase(7); });
  EXPECT_EQ(map.Find(7), nullptr);
  EXPECT_EQ(map.Find(8), &b);
  EXPECT_EQ(map.Find(9, &a), &a) << "the caller's absent value";
  int seen = 0;
  map.ForEach([&](uint32_t k, const int* v) {
    EXPECT_EQ(k, 8u);
    EXPECT_EQ(v, &b);
    ++seen;
  });
  EXPECT_EQ(seen, 1);
}

// Readers on several threads while a writer adds and removes keys: a reader never sees a
// torn or foreign value, and once an Update has returned every later Find sees it (the
// writer publishes key k's value, then tells readers k is in; a reader that learned k
// is in must find it). Run under ThreadSanitizer, this also checks that Find needs no lock.
TEST(PublishedMapTest, ReadersSeeEachPublishedSnapshotWhole) {
  PublishedMap<uint64_t, uint64_t> map;
  constexpr uint64_t kKeys = 1000;  // snapshots kept: about 8 MB
  std::atomic<uint64_t> published{0};  // keys [0, published) are in, with value 3k + 1
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1);
      while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t n = published.load(std::memory_order_acquire);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (n > 0) {
          const uint64_t k = x % n;
          if (map.Find(k, 0) != 3 * k + 1) wrong.fetch_add(1);
        }
        // Any key, published or not yet: absent or its value, never anything else.
        const uint64_t any = x % kKeys;
        const uint64_t v = map.Find(any, 0);
        if (v != 0 && v != 3 * any + 1) wrong.fetch_add(1);
      }
    });
  }
  for (uint64_t k = 0; k < kKeys; ++k) {
    map.Update([k](auto& m) { m[k] = 3 * k + 1; });
    published.store(k + 1, std::memory_order_release);
  }
  stop.store(true);
  for (std::thread& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(map.Size(), kKeys);
}

}  // namespace
}  // namespace farm
