// The allocator on one machine: slabs, blocks, regions, hints, frees, reclamation,
// out-of-memory and the recovery scan.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <deque>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "alloc/region_format.h"
#include "alloc/scan.h"
#include "farm/base/mutex.h"
#include "farm/base/object_layout.h"
#include "gtest/gtest.h"
#include "tests/alloc/alloc_test_util.h"

namespace farm::alloc {
namespace {

using testing::SingleMachine;
using testing::TestThread;

double StressScale() {
  const char* s = std::getenv("FARM_STRESS_SCALE");
  return s == nullptr ? 1.0 : std::max(0.01, std::atof(s));
}

// A payload near `approx` whose class has blocks of one 1 MiB unit.
uint64_t OneUnitPayload(uint64_t approx) {
  while (ClassInfo(*ClassForPayload(approx)).block_units != 1) --approx;
  return approx;
}

uint32_t UnitOf(Addr a) { return a.offset() / kBlockUnitBytes; }

const char* HeaderOf(Allocator& allocator, Addr a) {
  LocalRegion* r = allocator.blocks().FindRegion(a.region());
  return r == nullptr ? nullptr : r->base() + a.offset();
}

// An environment whose placement the test changes, with a generation that moves.
class ChangingEnvironment final : public AllocatorEnvironment {
 public:
  std::shared_ptr<const membership::Placement> placement() const override {
    ++placement_calls;
    return current;
  }
  uint64_t placement_generation() const override { return generation; }
  absl::StatusOr<RegionCapability> RegisterRegion(const Region& region) override {
    return RegionCapability{region.id(), 0, region.size(), 0, 0};
  }
  absl::Status DeregisterRegion(RegionId) override { return absl::OkStatus(); }

  std::shared_ptr<const membership::Placement> current;
  uint64_t generation = 1;
  mutable int placement_calls = 0;
};

std::shared_ptr<const membership::Placement> PlacementOf(std::vector<NodeId> members, uint64_t epoch) {
  membership::Configuration c;
  c.cluster = "t";
  c.epoch = epoch;
  c.replication = 1;
  c.virtual_rings = 100;
  for (NodeId id : members) {
    membership::Member m;
    m.id = id;
    m.fabric_addresses["tcp"] = "tcp:127.0.0.1:1";
    c.members.push_back(m);
  }
  return std::make_shared<const membership::Placement>(*membership::Placement::Create(c));
}

// An allocator of node `self` with 32 MB regions, placed by `env`.
absl::StatusOr<std::unique_ptr<Allocator>> AllocatorOn(ChangingEnvironment& env, EpochManager& epochs,
                                                       NodeId self) {
  AllocatorOptions o;
  o.self = self;
  o.region_bytes = 32u << 20;
  return Allocator::Create(o, &env, &epochs);
}

// The lock-free read path's cache: one placement fetch per generation, and a changed
// placement seen as soon as the generation moves.
TEST(Allocator, RemotePrimaryThroughACacheFetchesThePlacementOncePerGeneration) {
  ChangingEnvironment env;
  env.current = PlacementOf({1, 2}, 1);
  EpochManager epochs;
  absl::StatusOr<std::unique_ptr<Allocator>> allocator = AllocatorOn(env, epochs, 1);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  // A region node 2 is primary of under {1, 2}.
  RegionId region = 0;
  for (RegionId r = 1; r < 100000 && region == 0; ++r) {
    absl::StatusOr<membership::ReplicaSet> rs = env.current->Lookup(r);
    if (rs.ok() && rs->primary() == 2) region = r;
  }
  ASSERT_NE(region, 0u);
  PlacementCache cache;
  for (int i = 0; i < 100; ++i) ASSERT_EQ(*(*allocator)->RemotePrimary(region, &cache), 2u);
  EXPECT_EQ(env.placement_calls, 1);
  // Node 2 leaves, node 3 comes: the next lookup after the generation moves sees it.
  env.current = PlacementOf({1, 3}, 2);
  EXPECT_EQ(*(*allocator)->RemotePrimary(region, &cache), 2u) << "same generation: the cached placement";
  env.generation = 2;
  absl::StatusOr<NodeId> moved = (*allocator)->RemotePrimary(region, &cache);
  ASSERT_TRUE(moved.ok() || absl::IsFailedPrecondition(moved.status())) << moved.status();
  EXPECT_NE(moved.ok() ? *moved : 1, 2u);
  EXPECT_EQ(env.placement_calls, 2);
}

// A joining node may allocate before it applies the configuration that adds it: the
// region creation is refused as retryable, and succeeds once the node is a member.
TEST(Allocator, ANodeNotYetAMemberIsRefusedRetryably) {
  ChangingEnvironment env;
  env.current = PlacementOf({1}, 1);
  EpochManager epochs;
  absl::StatusOr<std::unique_ptr<Allocator>> allocator = AllocatorOn(env, epochs, 2);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  std::vector<NodeId> backups;
  absl::StatusOr<std::unique_ptr<LocalRegion>> early = (*allocator)->CreateRegion(std::nullopt, &backups);
  ASSERT_EQ(early.status().code(), absl::StatusCode::kUnavailable) << early.status();
  EXPECT_NE(early.status().message().find("not serving yet"), std::string::npos) << early.status();
  env.current = PlacementOf({1, 2}, 2);
  env.generation = 2;
  absl::StatusOr<std::unique_ptr<LocalRegion>> later = (*allocator)->CreateRegion(std::nullopt, &backups);
  ASSERT_TRUE(later.ok()) << later.status();
  (*allocator)->DropCreatedRegion(std::move(*later));
}

TEST(Allocator, FreedSlotIsReusedWithTheNextIncarnation) {
  SingleMachine m;
  auto t = m.NewThread();
  absl::StatusOr<FatPtr> a = t->Alloc(100);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size, 100u);
  EXPECT_EQ(a->addr.offset() % kObjectAlignment, 0u);
  const char* header = HeaderOf(m.allocator(), a->addr);
  ASSERT_NE(header, nullptr);
  EXPECT_TRUE(IsAllocated(LoadHeaderWord(header + kIncarnationOffset)));
  ASSERT_TRUE(t->Free(*a).ok());
  EXPECT_FALSE(IsAllocated(LoadHeaderWord(header + kIncarnationOffset)));

  absl::StatusOr<FatPtr> b = t->Alloc(98);  // same class (120-byte objects take 128-byte slots)
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->addr, a->addr);
  EXPECT_EQ(b->incarnation, a->incarnation + 1);
  // Each reuse bumps it again.
  for (uint32_t i = 2; i < 10; ++i) {
    ASSERT_TRUE(t->Free(*b).ok());
    b = t->Alloc(100);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->addr, a->addr);
    EXPECT_EQ(b->incarnation, a->incarnation + i);
  }
}

TEST(Allocator, BadFreesAreRefusedAndChangeNothing) {
  SingleMachine m;
  auto t = m.NewThread();
  FatPtr a = *t->Alloc(200);
  FatPtr stale = a;
  ASSERT_TRUE(t->Free(a).ok());
  absl::Status twice = t->Free(a);
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition) << twice;
  FatPtr b = *t->Alloc(200);  // the same slot, next incarnation
  ASSERT_EQ(b.addr, a.addr);
  absl::Status old = t->Free(stale);
  EXPECT_EQ(old.code(), absl::StatusCode::kFailedPrecondition) << old;
  EXPECT_NE(old.message().find("stale"), std::string::npos) << old;
  EXPECT_TRUE(IsAllocated(LoadHeaderWord(HeaderOf(m.allocator(), b.addr) + kIncarnationOffset)));

  FatPtr inside = b;
  inside.addr = Addr(b.addr.region(), b.addr.offset() + 16);
  EXPECT_EQ(t->Free(inside).code(), absl::StatusCode::kInvalidArgument);
  FatPtr wrong_size = b;
  wrong_size.size = 5000;
  EXPECT_EQ(t->Free(wrong_size).code(), absl::StatusCode::kInvalidArgument);
  FatPtr nowhere = b;
  nowhere.addr = Addr(b.addr.region() + 1, 64);
  EXPECT_NE(t->Free(nowhere).code(), absl::StatusCode::kOk);
  FatPtr metadata = b;
  metadata.addr = Addr(b.addr.region(), 4096);
  EXPECT_EQ(t->Free(metadata).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(t->Free(b).ok());
}

TEST(Allocator, ObjectSizeLimits) {
  SingleMachine m;
  auto t = m.NewThread();
  absl::StatusOr<FatPtr> too_big = t->Alloc(MaxPayloadBytes() + 1);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kOutOfRange);
  absl::StatusOr<FatPtr> largest = t->Alloc(MaxPayloadBytes());
  ASSERT_TRUE(largest.ok()) << largest.status();
  absl::StatusOr<FatPtr> empty = t->Alloc(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_NE(empty->addr, largest->addr);
}

TEST(Allocator, OutOfMemoryIsAnErrorAndRecovers) {
  // Two regions of 32 MiB: 62 usable units of 1 MiB.
  SingleMachine m(32 << 20, 64 << 20);
  auto t = m.NewThread();
  const uint64_t payload = OneUnitPayload(60000);
  const SizeClassInfo& info = ClassInfo(*ClassForPayload(payload));
  ASSERT_EQ(info.block_units, 1u);
  std::vector<FatPtr> objects;
  absl::Status last;
  while (true) {
    absl::StatusOr<FatPtr> p = t->Alloc(payload);
    if (!p.ok()) {
      last = p.status();
      break;
    }
    objects.push_back(*p);
    ASSERT_LT(objects.size(), 10000u);
  }
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_NE(last.message().find("capacity"), std::string::npos) << last;
  EXPECT_EQ(objects.size(), 62u * info.slots);
  EXPECT_EQ(m.allocator().Stats().blocks.regions, 2u);
  // Every object still intact and freeable; the memory is usable again.
  ASSERT_TRUE(t->Free(objects.back()).ok());
  objects.pop_back();
  absl::StatusOr<FatPtr> again = t->Alloc(payload);
  ASSERT_TRUE(again.ok()) << again.status();
  for (const FatPtr& p : objects) ASSERT_TRUE(t->Free(p).ok());
}

TEST(Allocator, HintsPlaceObjectsInTheSameBlockThenRegionThenNearby) {
  SingleMachine m(32 << 20, 256 << 20);
  auto t = m.NewThread();
  FatPtr a = *t->Alloc(100);
  const SizeClassInfo& info = ClassInfo(*ClassForPayload(100));
  // Fill a's block and more, so that the current block moves on.
  std::vector<FatPtr> same_class;
  for (uint32_t i = 0; i < info.slots + 10; ++i) same_class.push_back(*t->Alloc(100));
  FatPtr in_a_block;
  for (const FatPtr& p : same_class) {
    if (UnitOf(p.addr) == UnitOf(a.addr) && p.addr.region() == a.addr.region()) in_a_block = p;
  }
  ASSERT_FALSE(in_a_block.is_null());
  ASSERT_TRUE(t->Free(in_a_block).ok());
  // Same block: the freed slot in a's block, though the current block is another.
  FatPtr near_a = *t->Alloc(100, a.addr);
  EXPECT_EQ(near_a.addr.region(), a.addr.region());
  EXPECT_EQ(UnitOf(near_a.addr), UnitOf(a.addr));
  EXPECT_EQ(near_a.addr, in_a_block.addr);

  // Another class cannot share the block, but shares the region.
  FatPtr other = *t->Alloc(3000, a.addr);
  EXPECT_EQ(other.addr.region(), a.addr.region());
  EXPECT_NE(UnitOf(other.addr), UnitOf(a.addr));

  // Fill the region with hinted objects; then the hint leads to a new region nearby on
  // the same ring.
  const auto rings = m.env().placement()->virtual_rings();
  const auto at = *membership::SplitRegion(a.addr.region(), rings);
  FatPtr p;
  int in_hint_region = 0;
  for (int i = 0; i < 1000; ++i) {
    p = *t->Alloc(200000, a.addr);
    if (p.addr.region() != a.addr.region()) break;
    ++in_hint_region;
  }
  ASSERT_GT(in_hint_region, 0);
  ASSERT_NE(p.addr.region(), a.addr.region());
  const auto np = *membership::SplitRegion(p.addr.region(), rings);
  EXPECT_EQ(np.ring, at.ring);
  const uint32_t distance = np.position > at.position ? np.position - at.position : at.position - np.position;
  EXPECT_LE(distance, 1u << 16) << "position " << np.position << " vs hint " << at.position;
  // Further hinted allocations go to that nearby region, not to yet another.
  FatPtr q = *t->Alloc(200000, a.addr);
  EXPECT_EQ(q.addr.region(), p.addr.region());
}

TEST(Allocator, AFullHintRegionCostsNoNewBlockPerAllocation) {
  // A kv value overwritten with values of changing sizes: each is allocated near the
  // key's bucket (the hint) and the previous one freed. Once the hint's region is full,
  // the objects go to blocks at hand in a region nearby, not to a new block each (the
  // last one retired empty and given back only after an end-of-epoch round: without
  // rounds, as here, the capacity ran out after a couple hundred allocations).
  SingleMachine m(32 << 20, 256 << 20);
  auto t = m.NewThread();
  const FatPtr hint = *t->Alloc(100);
  const uint64_t filler = OneUnitPayload(250000);
  for (int i = 0;; ++i) {
    ASSERT_LT(i, 1000);
    absl::StatusOr<FatPtr> f = t->Alloc(filler, hint.addr);
    ASSERT_TRUE(f.ok()) << f.status();
    if (f->addr.region() != hint.addr.region()) break;
  }
  const auto at = *membership::SplitRegion(hint.addr.region(), m.env().placement()->virtual_rings());
  const uint64_t acquired = t->allocator->stats().blocks_acquired;
  std::set<SizeClass> classes;
  FatPtr previous;
  for (int k = 0; k < 3000; ++k) {
    const uint64_t size = 1 + (k * 977) % 3000;
    classes.insert(*ClassForPayload(size));
    ASSERT_FALSE(m.allocator().blocks().HasRoom(hint.addr.region(), *ClassForPayload(size)));
    absl::StatusOr<FatPtr> p = t->Alloc(size, hint.addr);
    ASSERT_TRUE(p.ok()) << "allocation " << k << ": " << p.status();
    const auto in = *membership::SplitRegion(p->addr.region(), m.env().placement()->virtual_rings());
    EXPECT_EQ(in.ring, at.ring) << "a region on the hint's ring";
    if (!previous.is_null()) {
      ASSERT_TRUE(t->Free(previous).ok());
    }
    previous = *p;
  }
  // At most one new block per class; none retired.
  EXPECT_LE(t->allocator->stats().blocks_acquired - acquired, classes.size());
  EXPECT_EQ(t->allocator->stats().blocks_retired, 0u);
  EXPECT_EQ(t->allocator->retired_blocks(), 0u);
  ASSERT_TRUE(t->Free(previous).ok());
}

TEST(Allocator, ReclamationWaitsForEveryOperationThatCouldStillRead) {
  // One region of 32 MiB: units 1..31.
  SingleMachine m(32 << 20, 32 << 20);
  auto t = m.NewThread();
  const uint64_t small = OneUnitPayload(60000);  // ~17 slots per 1 MiB block
  const uint32_t slots = ClassInfo(*ClassForPayload(small)).slots;
  std::vector<FatPtr> first_block;
  for (uint32_t i = 0; i < slots; ++i) first_block.push_back(*t->Alloc(small));
  FatPtr second = *t->Alloc(small);  // a second block becomes current
  const uint32_t retired_unit = UnitOf(first_block[0].addr);
  ASSERT_NE(UnitOf(second.addr), retired_unit);
  // Every other unit goes to another class.
  const uint64_t filler = OneUnitPayload(250000);
  for (int i = 0;; ++i) {
    ASSERT_LT(i, 1000);
    absl::StatusOr<FatPtr> f = t->Alloc(filler);
    if (!f.ok()) {
      ASSERT_EQ(f.status().code(), absl::StatusCode::kResourceExhausted) << f.status();
      break;
    }
    ASSERT_NE(UnitOf(f->addr), retired_unit);
  }
  const uint64_t other = OneUnitPayload(400000);
  ASSERT_NE(*ClassForPayload(other), *ClassForPayload(filler));

  // A reader that may hold a pointer into the first block.
  absl::StatusOr<EpochParticipant> reader = m.epochs().Register();
  ASSERT_TRUE(reader.ok());
  reader->Enter();
  for (const FatPtr& p : first_block) ASSERT_TRUE(t->Free(p).ok());
  EXPECT_EQ(t->allocator->retired_blocks(), 1u);
  EXPECT_TRUE(t->allocator->round_running());
  for (int i = 0; i < 2000; ++i) t->loop->RunOnce();
  EXPECT_TRUE(t->allocator->round_running());
  // The retired memory is not handed to another class while the reader runs.
  absl::StatusOr<FatPtr> big = t->Alloc(other);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  const char* base = m.allocator().blocks().FindRegion(second.addr.region())->base();
  EXPECT_EQ(BlockState::Decode(LoadBlockWord(base, retired_unit)).kind, BlockKind::kSlab);

  reader->Exit();
  ASSERT_TRUE(t->RunUntil([&] { return !t->allocator->round_running(); }));
  EXPECT_EQ(t->allocator->retired_blocks(), 0u);
  EXPECT_EQ(BlockState::Decode(LoadBlockWord(base, retired_unit)).kind, BlockKind::kFree);
  big = t->Alloc(other);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(UnitOf(big->addr), retired_unit);
  // The reused unit's slots start at an incarnation of the new generation: old headers
  // do not survive at the new slot boundaries, and no stale pointer matches.
  const BlockState reused = BlockState::Decode(LoadBlockWord(base, retired_unit));
  EXPECT_EQ(reused.generation, 2u);
  EXPECT_EQ(IncarnationOf(LoadHeaderWord(base + big->addr.offset() + kIncarnationOffset)),
            FirstIncarnation(2));
  EXPECT_EQ(big->incarnation, FatIncarnation(FirstIncarnation(2)));
}

// Random alloc/free from several threads, frees often by another thread than the
// allocating one, checked against a shadow map of live extents and a fill pattern.
TEST(Allocator, StressNoTwoLiveObjectsOverlap) {
  SingleMachine m(32 << 20, 1024 << 20);
  const int threads = 4;
  const int ops = static_cast<int>(150000 * StressScale());
  std::atomic<uint64_t> released{0};
  Mutex mu;
  std::map<uint64_t, uint64_t> extents ABSL_GUARDED_BY(mu);  // raw addr -> end
  std::vector<FatPtr> pool ABSL_GUARDED_BY(mu);                // live, any thread frees
  std::atomic<int> failures{0};

  auto fill = [&](FatPtr p, bool check) {
    char* base = m.allocator().blocks().FindRegion(p.addr.region())->base() + p.addr.offset();
    const uint64_t n = std::min<uint64_t>(p.size, 256);
    const char c = static_cast<char>(p.addr.raw() * 31 + p.incarnation);
    for (uint64_t i = 0; i < n; ++i) {
      if (check && base[kObjectHeaderBytes + i + 2] != c) {
        failures.fetch_add(1);
        return;
      }
      base[kObjectHeaderBytes + i + 2] = c;
    }
  };

  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      auto t = m.NewThread();
      std::mt19937_64 rng(w + 1);
      std::vector<FatPtr> mine;
      for (int i = 0; i < ops; ++i) {
        if (i % 64 == 0) t->loop->RunOnce();
        if (i % 4000 == 2000) {
          // A burst that fills more than a block of one class and frees it all: the
          // first block empties while not current, is retired, and after a round its
          // memory goes to whatever class asks next.
          const uint64_t size = 20000 + 16 * w;
          const uint32_t n = ClassInfo(*ClassForPayload(size)).slots + 1;
          std::vector<FatPtr> burst;
          for (uint32_t k = 0; k < n; ++k) {
            absl::StatusOr<FatPtr> p = t->Alloc(size);
            if (!p.ok()) {
              failures.fetch_add(1);
              ADD_FAILURE() << p.status();
              return;
            }
            const uint64_t start = p->addr.raw(), end = start + MaxStoredBytes(size);
            MutexLock lock(&mu);
            auto next = extents.lower_bound(start);
            if (next != extents.end() && next->first < end) failures.fetch_add(1);
            if (next != extents.begin() && std::prev(next)->second > start) failures.fetch_add(1);
            extents[start] = end;
            burst.push_back(*p);
          }
          for (const FatPtr& p : burst) {
            {
              MutexLock lock(&mu);
              extents.erase(p.addr.raw());
            }
            if (!t->Free(p).ok()) failures.fetch_add(1);
          }
        }
        const bool alloc = rng() % 100 < 55 || mine.empty();
        if (alloc) {
          const uint64_t r = rng() % 100;
          const uint64_t size = r < 70 ? rng() % 200 : r < 95 ? rng() % 4000 : rng() % 70000;
          absl::StatusOr<FatPtr> p = t->Alloc(size);
          if (!p.ok()) {
            failures.fetch_add(1);
            ADD_FAILURE() << p.status();
            return;
          }
          const uint64_t start = p->addr.raw();
          const uint64_t end = start + MaxStoredBytes(size);
          {
            MutexLock lock(&mu);
            auto next = extents.lower_bound(start);
            if (next != extents.end() && next->first < end) failures.fetch_add(1);
            if (next != extents.begin() && std::prev(next)->second > start) failures.fetch_add(1);
            extents[start] = end;
          }
          fill(*p, false);
          if (rng() % 3 == 0) {
            MutexLock lock(&mu);
            pool.push_back(*p);
          } else {
            mine.push_back(*p);
          }
        } else {
          FatPtr victim;
          if (rng() % 2 == 0) {
            MutexLock lock(&mu);
            if (!pool.empty()) {
              const size_t k = rng() % pool.size();
              victim = pool[k];
              pool[k] = pool.back();
              pool.pop_back();
            }
          }
          if (victim.is_null()) {
            const size_t k = rng() % mine.size();
            victim = mine[k];
            mine[k] = mine.back();
            mine.pop_back();
          }
          fill(victim, true);
          {
            MutexLock lock(&mu);
            extents.erase(victim.addr.raw());
          }
          absl::Status s = t->Free(victim);
          if (!s.ok()) {
            failures.fetch_add(1);
            ADD_FAILURE() << s;
          }
        }
      }
      for (const FatPtr& p : mine) {
        {
          MutexLock lock(&mu);
          extents.erase(p.addr.raw());
        }
        if (!t->Free(p).ok()) failures.fetch_add(1);
      }
      t->RunUntil([&] { return !t->allocator->round_running(); });
      released.fetch_add(t->allocator->stats().blocks_released);
    });
  }
  for (std::thread& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(released.load(), 0u) << "no block emptied and went through a round";
  // The shared pool is freed by a thread that owns none of the blocks.
  auto t = m.NewThread();
  for (const FatPtr& p : pool) ASSERT_TRUE(t->Free(p).ok());
}

// A retired block is no longer found by BlockAt, so an operation that starts after the
// round began cannot hold its descriptor when the release deletes it.
TEST(Allocator, RetiredBlocksAreUnpublishedBeforeTheirRound) {
  SingleMachine m(32 << 20, 32 << 20);
  auto t = m.NewThread();
  const uint64_t small = OneUnitPayload(60000);
  const uint32_t slots = ClassInfo(*ClassForPayload(small)).slots;
  std::vector<FatPtr> first;
  for (uint32_t i = 0; i < slots; ++i) first.push_back(*t->Alloc(small));
  ASSERT_TRUE(t->Alloc(small).ok());  // another block becomes current
  LocalRegion* r = m.allocator().blocks().FindRegion(first[0].addr.region());
  ASSERT_NE(r->BlockAt(first[0].addr.offset()), nullptr);
  for (const FatPtr& p : first) ASSERT_TRUE(t->Free(p).ok());
  ASSERT_TRUE(t->allocator->round_running());
  EXPECT_EQ(r->BlockAt(first[0].addr.offset()), nullptr);
  // A stale free meanwhile is refused without touching the block.
  EXPECT_EQ(t->Free(first[0]).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(t->RunUntil([&] { return !t->allocator->round_running(); }));
  EXPECT_EQ(t->allocator->stats().blocks_released, 1u);
}

// Block reuse starts slots at a new incarnation, so a pointer from before the reuse
// cannot free (or read) the object allocated after it, even in the same class.
TEST(Allocator, StalePointersDoNotMatchObjectsOfAReusedBlock) {
  SingleMachine m(32 << 20, 32 << 20);
  auto t = m.NewThread();
  const uint64_t small = OneUnitPayload(60000);
  const uint32_t slots = ClassInfo(*ClassForPayload(small)).slots;
  std::vector<FatPtr> first, second;
  for (uint32_t i = 0; i < slots; ++i) first.push_back(*t->Alloc(small));
  for (uint32_t i = 0; i < slots; ++i) second.push_back(*t->Alloc(small));  // block 2 full
  const FatPtr stale = first[0];
  for (const FatPtr& p : first) ASSERT_TRUE(t->Free(p).ok());
  ASSERT_TRUE(t->RunUntil([&] { return !t->allocator->round_running(); }));
  ASSERT_EQ(t->allocator->stats().blocks_released, 1u);
  absl::StatusOr<FatPtr> fresh = t->Alloc(small);  // the released unit, same class
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_EQ(fresh->addr, stale.addr);
  EXPECT_NE(fresh->incarnation, stale.incarnation);
  EXPECT_EQ(t->Free(stale).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(t->Free(*fresh).ok());
}

// A channel whose block replications complete only when the test says so.
class DeferredChannel final : public ThreadChannel {
 public:
  void ReplicateRegion(std::span<const NodeId>, RegionId, uint64_t, StatusDone done) override {
    done(absl::OkStatus());
  }
  void ReplicateBlockWords(std::span<const NodeId>, RegionId, uint32_t, std::span<const uint64_t>,
                           StatusDone done) override {
    pending.push_back(std::move(done));
  }
  void AllocateRemote(NodeId, uint32_t, Addr, PtrDone done) override {
    done(absl::UnavailableError("no peers"));
  }
  void FreeRemote(NodeId, FatPtr, StatusDone done) override { done(absl::UnavailableError("no peers")); }
  void EndOfEpochRound(std::vector<NodeId>, StatusDone done) override { done(absl::OkStatus()); }
  std::deque<StatusDone> pending;
};

TEST(Allocator, ABlockTheBackupsLackIsNeverUsed) {
  SingleMachine m(32 << 20, 32 << 20);
  DeferredChannel channel;
  const uint64_t small = OneUnitPayload(60000);
  {
    // Replication fails while the thread waits: the allocation fails, the block goes back.
    std::unique_ptr<ThreadAllocator> a = *m.allocator().NewThread(&channel);
    std::optional<absl::StatusOr<FatPtr>> result;
    a->Allocate(small, {}, [&](absl::StatusOr<FatPtr> p) { result = std::move(p); });
    ASSERT_FALSE(result.has_value());
    ASSERT_EQ(channel.pending.size(), 1u);
    StatusDone done = std::move(channel.pending.front());
    channel.pending.pop_front();
    done(absl::UnavailableError("backup did not answer"));
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(result->status().code(), absl::StatusCode::kUnavailable) << result->status();
    EXPECT_EQ(m.allocator().Stats().blocks.blocks, 0u);
    // The same, but the thread goes away before the answer.
    result.reset();
    a->Allocate(small, {}, [&](absl::StatusOr<FatPtr> p) { result = std::move(p); });
    ASSERT_EQ(channel.pending.size(), 2u);  // the undo of the first, then this block
    a.reset();
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(result->status().code(), absl::StatusCode::kCancelled);
    for (StatusDone& d : channel.pending) d(absl::UnavailableError("backup did not answer"));
    channel.pending.clear();
  }
  const AllocatorStats stats = m.allocator().Stats();
  EXPECT_EQ(stats.blocks.blocks, 0u);
  EXPECT_EQ(stats.blocks.adoptable, 0u);
  auto t = m.NewThread();
  ASSERT_TRUE(t->Alloc(small).ok());
  EXPECT_EQ(t->allocator->stats().blocks_adopted, 0u);
}

TEST(Allocator, BlocksEmptiedByOtherThreadsAreReclaimed) {
  SingleMachine m(32 << 20, 32 << 20);
  auto a = m.NewThread();
  auto b = m.NewThread();
  const uint64_t small = OneUnitPayload(60000);
  const uint32_t slots = ClassInfo(*ClassForPayload(small)).slots;
  std::vector<FatPtr> first;
  for (uint32_t i = 0; i < slots; ++i) first.push_back(*a->Alloc(small));
  ASSERT_TRUE(a->Alloc(small).ok());
  for (const FatPtr& p : first) ASSERT_TRUE(b->Free(p).ok());
  EXPECT_EQ(a->allocator->retired_blocks(), 0u) << "the owner has not seen the frees yet";
  a->allocator->Reclaim();
  EXPECT_EQ(a->allocator->retired_blocks(), 1u);
  ASSERT_TRUE(a->RunUntil([&] { return !a->allocator->round_running(); }));
  EXPECT_EQ(a->allocator->stats().blocks_released, 1u);
}

TEST(Allocator, ScanRebuildsExactlyTheLiveSet) {
  SingleMachine m(256 << 20, 256 << 20);
  auto t = m.NewThread();
  std::mt19937_64 rng(3);
  std::map<uint64_t, FatPtr> live;
  for (int i = 0; i < 4000; ++i) {
    if (rng() % 3 != 0 || live.empty()) {
      const uint64_t size = rng() % 2 == 0 ? rng() % 300 : rng() % 30000;
      FatPtr p = *t->Alloc(size);
      live[p.addr.raw()] = p;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(t->Free(it->second).ok());
      live.erase(it);
    }
  }
  std::vector<LocalRegion*> regions = m.allocator().blocks().Regions();
  ASSERT_EQ(regions.size(), 1u);
  LocalRegion* r = regions[0];
  absl::StatusOr<RegionScan> scan = ScanRegion(r->base(), r->id(), r->bytes());
  ASSERT_TRUE(scan.ok()) << scan.status();
  std::vector<RegionScan::Object> found = scan->LiveObjects();
  ASSERT_EQ(found.size(), live.size());
  for (const RegionScan::Object& o : found) {
    auto it = live.find(o.addr.raw());
    ASSERT_NE(it, live.end()) << o.addr.ToString();
    EXPECT_EQ(FatIncarnation(o.incarnation), it->second.incarnation);
  }

  // A second allocator takes the region over from its memory alone and carries on.
  SingleMachine restarted(256 << 20, 512 << 20);
  absl::StatusOr<Region> copy = Region::Attach(r->id(), UniqueFd(dup(r->region().fd())), r->bytes());
  ASSERT_TRUE(copy.ok()) << copy.status();
  ASSERT_TRUE(restarted.allocator().AdoptRegion(std::make_unique<Region>(std::move(*copy))).ok());
  auto t2 = restarted.NewThread();
  std::map<uint64_t, uint64_t> extents;
  for (const auto& [raw, p] : live) extents[raw] = raw + MaxStoredBytes(p.size);
  for (int i = 0; i < 3000; ++i) {
    const uint64_t size = rng() % 2 == 0 ? rng() % 300 : rng() % 30000;
    absl::StatusOr<FatPtr> p = t2->Alloc(size);
    ASSERT_TRUE(p.ok()) << p.status();
    const uint64_t start = p->addr.raw(), end = start + MaxStoredBytes(size);
    auto next = extents.lower_bound(start);
    ASSERT_FALSE(next != extents.end() && next->first < end) << p->addr.ToString();
    ASSERT_FALSE(next != extents.begin() && std::prev(next)->second > start) << p->addr.ToString();
    extents[start] = end;
  }
  // The objects found by the scan are freed through the new allocator.
  for (const auto& [raw, p] : live) ASSERT_TRUE(t2->Free(p).ok()) << p.addr.ToString();
}

TEST(Allocator, ScanRefusesACorruptTable) {
  SingleMachine m(32 << 20, 32 << 20);
  auto t = m.NewThread();
  ASSERT_TRUE(t->Alloc(200000).ok());
  LocalRegion* r = m.allocator().blocks().Regions()[0];
  ASSERT_TRUE(ScanRegion(r->base(), r->id(), r->bytes()).ok());
  // A continuation without its slab block.
  const uint32_t free_unit = r->units() - 1;
  const uint64_t saved = LoadBlockWord(r->base(), free_unit);
  StoreBlockWord(r->base(), free_unit, BlockState{BlockKind::kContinuation, 0, 1, 1}.Encode());
  absl::StatusOr<RegionScan> bad = ScanRegion(r->base(), r->id(), r->bytes());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  StoreBlockWord(r->base(), free_unit, uint64_t{7} << 60);
  EXPECT_EQ(ScanRegion(r->base(), r->id(), r->bytes()).status().code(), absl::StatusCode::kDataLoss);
  StoreBlockWord(r->base(), free_unit, saved);
  EXPECT_TRUE(ScanRegion(r->base(), r->id(), r->bytes()).ok());
}

}  // namespace
}  // namespace farm::alloc
