// Lock-free reads through ObjectReader on a 3-node in-process cluster, shm and tcp:
// remote and local reads, capability caching, freed and stale pointers, retries while a
// writer holds the lock, giving up, regions nobody holds, and a concurrent writer whose
// payloads carry checksums.
#include "tx/object_reader.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "farm/base/object_codec.h"
#include "farm/event/event_loop.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/node_cluster.h"

namespace farm::tx {
namespace {

using testing::AllocateOn;
using testing::FreeOn;

class ObjectReaderTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::NodeCluster>> c =
        testing::NodeCluster::Start(GetParam(), 3, "object_reader");
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }
  void TearDown() override {
    for (auto& [id, reader] : readers_) {
      RunInLoop(cluster_->node(id).loop(0), [&reader = reader] { reader.reset(); });
    }
    readers_.clear();
    cluster_.reset();
  }

  node::Node& node(NodeId id) { return cluster_->node(id); }

  ObjectReader& ReaderOn(NodeId id, ObjectReaderOptions options = {}) {
    std::unique_ptr<ObjectReader>& r = readers_[id];
    if (r == nullptr) {
      // The node's own readers (one per thread) use the ids from the default on.
      options.slot_region = kFirstPrivateRegion + 0x200;
      absl::StatusOr<std::unique_ptr<ObjectReader>> created = ObjectReader::Create(
          &node(id).messenger().thread(0), &node(id).fabric(), &node(id).allocator(), options);
      EXPECT_TRUE(created.ok()) << created.status();
      r = std::move(*created);
    }
    return *r;
  }

  struct Seen {
    absl::Status status;
    uint64_t version = 0;
    std::string payload;
  };
  Seen Read(NodeId on, FatPtr p) {
    ObjectReader& reader = ReaderOn(on);
    auto seen = std::make_shared<Seen>();
    auto done = std::make_shared<Notification>();
    node(on).loop(0).Post([&reader, p, seen, done] {
      reader.Read(p, [seen, done](absl::StatusOr<ObjectRead> r) {
        seen->status = r.status();
        if (r.ok()) {
          seen->version = r->version;
          seen->payload.assign(r->data.data(), r->data.size());
        }
        done->Notify();
      });
    });
    EXPECT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(20)));
    return *seen;
  }

  struct SeenMany {
    absl::Status status;
    std::vector<std::string> payloads;
  };
  SeenMany ReadMany(NodeId on, std::vector<FatPtr> objects) {
    ObjectReader& reader = ReaderOn(on);
    auto seen = std::make_shared<SeenMany>();
    auto done = std::make_shared<Notification>();
    node(on).loop(0).Post([&reader, objects, seen, done] {
      reader.ReadMany(objects, [seen, done](absl::StatusOr<std::span<const ObjectRead>> r) {
        seen->status = r.status();
        if (r.ok()) {
          for (const ObjectRead& o : *r) seen->payloads.emplace_back(o.data.data(), o.data.size());
        }
        done->Notify();
      });
    });
    EXPECT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(20)));
    return *seen;
  }

  // Writes `data` into the object on its primary, through the writer protocol.
  uint64_t Write(NodeId primary, FatPtr p, const std::string& data) {
    char* object = Object(primary, p);
    const uint64_t v = LoadHeaderWord(object + kVersionOffset);
    EXPECT_TRUE(LockObject(object, v));
    WriteLockedObject(object, p.addr.offset(), v, data);
    return NextVersion(v);
  }
  char* Object(NodeId primary, FatPtr p) {
    return node(primary).allocator().blocks().FindRegion(p.addr.region())->base() + p.addr.offset();
  }

  std::unique_ptr<testing::NodeCluster> cluster_;
  std::map<NodeId, std::unique_ptr<ObjectReader>> readers_;
};

TEST_P(ObjectReaderTest, ReadsRemoteAndLocalObjects) {
  absl::StatusOr<FatPtr> p = AllocateOn(node(1), 500);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string data(500, 'x');
  const uint64_t version = Write(1, *p, data);
  Seen remote = Read(2, *p);
  ASSERT_TRUE(remote.status.ok()) << remote.status;
  EXPECT_EQ(remote.payload, data);
  EXPECT_EQ(remote.version, version);
  Seen again = Read(2, *p);
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(ReaderOn(2).stats().capability_fetches, 1u) << "the capability is cached";
  Seen local = Read(1, *p);
  ASSERT_TRUE(local.status.ok()) << local.status;
  EXPECT_EQ(local.payload, data);
  EXPECT_EQ(ReaderOn(1).stats().local, 1u);
}

// Reads of one remote region issued together, before its capability is cached, wait for
// one fetch of it (not one each), and all of them — far more than the reader's slots —
// return the object.
TEST_P(ObjectReaderTest, ReadsIssuedTogetherFetchTheCapabilityOnce) {
  absl::StatusOr<FatPtr> p = AllocateOn(node(1), 64);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string data(64, 'c');
  Write(1, *p, data);
  constexpr int kReads = 2000;
  ObjectReader& reader = ReaderOn(2);
  struct Tally {
    int ok = 0;
    int done = 0;
    absl::Status first_error;
  };
  auto tally = std::make_shared<Tally>();
  auto all = std::make_shared<Notification>();
  node(2).loop(0).Post([&reader, p = *p, data, tally, all] {
    for (int i = 0; i < kReads; ++i) {
      reader.Read(p, [data, tally, all](absl::StatusOr<ObjectRead> r) {
        if (r.ok() && std::string(r->data.data(), r->data.size()) == data) {
          ++tally->ok;
        } else if (tally->first_error.ok()) {
          tally->first_error = r.ok() ? absl::DataLossError("wrong payload") : r.status();
        }
        if (++tally->done == kReads) all->Notify();
      });
    }
  });
  ASSERT_TRUE(all->WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_EQ(tally->ok, kReads) << tally->first_error;
  uint64_t fetches = 0;
  RunInLoop(node(2).loop(0), [&] { fetches = reader.stats().capability_fetches; });
  EXPECT_EQ(fetches, 1u);
}

TEST_P(ObjectReaderTest, ReadManyReadsNeighboursWithOneRead) {
  std::vector<FatPtr> objects;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<FatPtr> p = AllocateOn(node(1), 200);
    ASSERT_TRUE(p.ok()) << p.status();
    Write(1, *p, std::string(200, static_cast<char>('a' + i)));
    objects.push_back(*p);
  }
  std::sort(objects.begin(), objects.end(),
            [](const FatPtr& a, const FatPtr& b) { return a.addr.offset() < b.addr.offset(); });
  ASSERT_EQ(objects[0].addr.region(), objects[2].addr.region());
  for (NodeId on : {NodeId{2}, NodeId{1}}) {
    const uint64_t reads_before = ReaderOn(on).stats().reads;
    SeenMany many = ReadMany(on, objects);
    ASSERT_TRUE(many.status.ok()) << many.status;
    ASSERT_EQ(many.payloads.size(), 3u);
    std::set<std::string> got(many.payloads.begin(), many.payloads.end());
    EXPECT_EQ(got, (std::set<std::string>{std::string(200, 'a'), std::string(200, 'b'), std::string(200, 'c')}));
    EXPECT_EQ(ReaderOn(on).stats().reads, reads_before + 1) << "one read for all three";
  }
  // A locked neighbour delays the whole read until its writer publishes.
  char* locked = Object(1, objects[1]);
  const uint64_t v = LoadHeaderWord(locked + kVersionOffset);
  ASSERT_TRUE(LockObject(locked, v));
  std::thread writer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    WriteLockedObject(locked, objects[1].addr.offset(), v, std::string(200, 'z'));
  });
  SeenMany after = ReadMany(2, objects);
  writer.join();
  ASSERT_TRUE(after.status.ok()) << after.status;
  EXPECT_EQ(after.payloads[1], std::string(200, 'z'));
  // Shape errors: descending order, and a stale incarnation anywhere fails the read.
  EXPECT_EQ(ReadMany(2, {objects[1], objects[0]}).status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadMany(2, {}).status.code(), absl::StatusCode::kInvalidArgument);
  FatPtr stale = objects[2];
  stale.incarnation += 1;
  EXPECT_EQ(ReadMany(2, {objects[0], stale}).status.code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(ObjectReaderTest, FreedAndStalePointersAreErrorsNotData) {
  absl::StatusOr<FatPtr> p = AllocateOn(node(1), 100);
  ASSERT_TRUE(p.ok());
  Write(1, *p, std::string(100, 'a'));
  ASSERT_TRUE(FreeOn(node(1), *p).ok());
  EXPECT_EQ(Read(2, *p).status.code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<FatPtr> again = AllocateOn(node(1), 100);  // the same slot, next incarnation
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->addr, p->addr);
  Write(1, *again, std::string(100, 'b'));
  Seen stale = Read(2, *p);
  EXPECT_EQ(stale.status.code(), absl::StatusCode::kFailedPrecondition) << stale.status;
  EXPECT_NE(stale.status.message().find("incarnation"), std::string::npos) << stale.status;
  EXPECT_EQ(Read(3, *again).payload, std::string(100, 'b'));
  FatPtr nowhere = *p;
  nowhere.addr = Addr(p->addr.region() ^ 0x5a5a5a, 64);
  EXPECT_FALSE(Read(2, nowhere).status.ok());
  EXPECT_EQ(Read(2, FatPtr{}).status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ObjectReaderTest, ALockedObjectIsRetriedUntilItsWriterPublishes) {
  absl::StatusOr<FatPtr> p = AllocateOn(node(1), 200);
  ASSERT_TRUE(p.ok());
  Write(1, *p, std::string(200, 'o'));
  char* object = Object(1, *p);
  const uint64_t v = LoadHeaderWord(object + kVersionOffset);
  ASSERT_TRUE(LockObject(object, v));
  std::thread writer([&] {
    absl::SleepFor(absl::Milliseconds(30));
    WriteLockedObject(object, p->addr.offset(), v, std::string(200, 'n'));
  });
  Seen seen = Read(2, *p);
  writer.join();
  ASSERT_TRUE(seen.status.ok()) << seen.status;
  EXPECT_EQ(seen.payload, std::string(200, 'n'));
  EXPECT_GT(ReaderOn(2).stats().retries_locked, 0u);
}

TEST_P(ObjectReaderTest, AnObjectLockedForeverIsDeadlineExceeded) {
  ObjectReaderOptions o;
  o.give_up_after = absl::Milliseconds(50);
  ReaderOn(2, o);
  absl::StatusOr<FatPtr> p = AllocateOn(node(1), 64);
  ASSERT_TRUE(p.ok());
  Write(1, *p, std::string(64, 'q'));
  char* object = Object(1, *p);
  const uint64_t v = LoadHeaderWord(object + kVersionOffset);
  ASSERT_TRUE(LockObject(object, v));
  Seen seen = Read(2, *p);
  EXPECT_EQ(seen.status.code(), absl::StatusCode::kDeadlineExceeded) << seen.status;
  UnlockObject(object, p->addr.offset(), 64, v);
  EXPECT_TRUE(Read(2, *p).status.ok());
}

uint64_t Checksum(const std::string& s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(s[i])) * 1099511628211ull;
  return h;
}

TEST_P(ObjectReaderTest, ConcurrentWritesAreNeverSeenHalfDone) {
  const uint64_t payload = 700;  // 12 cache lines
  absl::StatusOr<FatPtr> p = AllocateOn(node(1), payload);
  ASSERT_TRUE(p.ok());
  auto fill = [&](uint64_t seed) {
    std::string s(payload, '\0');
    for (size_t i = 0; i + 8 < payload; ++i) s[i] = static_cast<char>(seed * 31 + i);
    const uint64_t sum = Checksum(s, payload - 8);
    std::memcpy(s.data() + payload - 8, &sum, 8);
    return s;
  };
  Write(1, *p, fill(0));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t seed = 1; !stop.load(std::memory_order_relaxed); ++seed) Write(1, *p, fill(seed));
  });
  const uint64_t reads = testing::Scaled(3000);
  uint64_t bad = 0;
  for (uint64_t i = 0; i < reads; ++i) {
    Seen seen = Read(2 + i % 2, *p);
    ASSERT_TRUE(seen.status.ok()) << seen.status;
    uint64_t sum;
    std::memcpy(&sum, seen.payload.data() + payload - 8, 8);
    if (sum != Checksum(seen.payload, payload - 8)) ++bad;
  }
  stop = true;
  writer.join();
  EXPECT_EQ(bad, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, ObjectReaderTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm::tx
