// The allocator across nodes: three Nodes in one process (static membership, r = 3)
// over shm and tcp. Regions and block-table entries reach the backups when they are
// made; a hint in another node's region allocates on that node; frees travel to the
// primary; end-of-epoch rounds wait for every node; malformed requests are refused.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "alloc/alloc_service.h"
#include "alloc/messages.h"
#include "alloc/region_format.h"
#include "farm/base/object_codec.h"
#include "farm/base/object_layout.h"
#include "farm/node/node.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "membership/placement.h"
#include "tests/support/node_cluster.h"

namespace farm::node {
namespace {

class AllocClusterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::NodeCluster>> c =
        testing::NodeCluster::Start(GetParam(), 3, "alloc_cluster");
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }
  void TearDown() override { cluster_.reset(); }

  Node& node(NodeId id) { return cluster_->node(id); }

  template <typename Result, typename Op>
  Result RunOn(Node& n, size_t t, Op op) {
    return testing::RunOn<Result>(n, t, std::move(op));
  }
  absl::StatusOr<FatPtr> Allocate(Node& n, uint64_t payload, Addr hint = {}, size_t t = 0) {
    return testing::AllocateOn(n, payload, hint, t);
  }
  absl::Status Free(Node& n, FatPtr p, size_t t = 0) { return testing::FreeOn(n, p, t); }

  // A raw request from `from`'s thread 0 to `to`.
  absl::Status Call(Node& from, NodeId to, MsgId id, std::string payload) {
    return RunOn<absl::Status>(from, 0, [&from, to, id, payload](alloc::ThreadAllocator&, auto finish) {
      absl::Status sent = from.messenger().thread(0).Call(
          to, id, payload, [finish](const absl::Status& s, absl::string_view) mutable { finish(s); });
      if (!sent.ok()) finish(sent);
    });
  }

  bool AllocatedAt(Node& primary, Addr a) {
    alloc::LocalRegion* r = primary.allocator().blocks().FindRegion(a.region());
    return r != nullptr && IsAllocated(LoadHeaderWord(r->base() + a.offset() + kIncarnationOffset));
  }

  std::unique_ptr<testing::NodeCluster> cluster_;
};

TEST_P(AllocClusterTest, EveryNodeHasAFirstRegionHeldByItsBackups) {
  auto placement = membership::Placement::Create(*node(1).membership().current());
  ASSERT_TRUE(placement.ok());
  for (NodeId id = 1; id <= 3; ++id) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (node(id).allocator().blocks().Regions().empty() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    std::vector<alloc::LocalRegion*> regions = node(id).allocator().blocks().Regions();
    ASSERT_EQ(regions.size(), 1u) << "node " << id;
    absl::StatusOr<membership::ReplicaSet> set = placement->Lookup(regions[0]->id());
    ASSERT_TRUE(set.ok());
    EXPECT_EQ(set->primary(), id);
    for (NodeId b : set->backups()) {
      EXPECT_NE(node(b).backups().Find(regions[0]->id()), nullptr) << "node " << b;
    }
  }
}

TEST_P(AllocClusterTest, RegionsAndBlocksReachTheBackupsWhenMade) {
  absl::StatusOr<FatPtr> p = Allocate(node(1), 500);
  ASSERT_TRUE(p.ok()) << p.status();
  const RegionId region = p->addr.region();
  auto placement = membership::Placement::Create(*node(1).membership().current());
  ASSERT_TRUE(placement.ok());
  absl::StatusOr<membership::ReplicaSet> set = placement->Lookup(region);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->primary(), 1u);
  ASSERT_EQ(set->backups().size(), 2u);
  const uint32_t unit = p->addr.offset() / alloc::kBlockUnitBytes;
  const char* primary_base = node(1).allocator().blocks().FindRegion(region)->base();
  for (NodeId b : set->backups()) {
    const Region* copy = node(b).backups().Find(region);
    ASSERT_NE(copy, nullptr) << "node " << b;
    EXPECT_TRUE(alloc::CheckRegionHeader(copy->base(), region, copy->size()).ok());
    EXPECT_EQ(alloc::LoadBlockWord(copy->base(), unit), alloc::LoadBlockWord(primary_base, unit))
        << "node " << b;
  }
}

TEST_P(AllocClusterTest, ARemoteHintAllocatesOnThePrimaryAndFreesGoThere) {
  absl::StatusOr<FatPtr> anchor = Allocate(node(1), 200);
  ASSERT_TRUE(anchor.ok()) << anchor.status();
  // Node 2 allocates next to node 1's object: the object lives in node 1's region.
  absl::StatusOr<FatPtr> near = Allocate(node(2), 1000, anchor->addr);
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_EQ(near->addr.region(), anchor->addr.region());
  EXPECT_TRUE(AllocatedAt(node(1), near->addr));
  EXPECT_EQ(node(2).allocator().blocks().FindRegion(near->addr.region()), nullptr);

  // Node 3 frees it on node 1; a second free is refused there.
  ASSERT_TRUE(Free(node(3), *near).ok());
  EXPECT_FALSE(AllocatedAt(node(1), near->addr));
  absl::Status again = Free(node(3), *near);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition) << again;
  // A hint naming a region nobody holds fails cleanly.
  Addr nowhere(anchor->addr.region() + 1, 0);
  absl::StatusOr<FatPtr> lost = Allocate(node(2), 10, nowhere);
  EXPECT_FALSE(lost.ok());
}

TEST_P(AllocClusterTest, EndOfEpochRoundsWaitForEveryNode) {
  // Node 1 fills one block and empties it: the block is retired.
  const uint64_t payload = 60000;
  const alloc::SizeClassInfo& info = alloc::ClassInfo(*alloc::ClassForPayload(payload));
  std::vector<FatPtr> objects;
  for (uint32_t i = 0; i < info.slots * info.block_units + 1; ++i) {
    absl::StatusOr<FatPtr> p = Allocate(node(1), payload);
    ASSERT_TRUE(p.ok()) << p.status();
    objects.push_back(*p);
  }
  // A reader on node 3 that started before the frees.
  absl::StatusOr<alloc::EpochParticipant> reader = node(3).allocator().epochs().Register();
  ASSERT_TRUE(reader.ok());
  reader->Enter();
  const uint32_t first_unit = objects[0].addr.offset() / alloc::kBlockUnitBytes;
  for (uint32_t i = 0; i < info.slots; ++i) ASSERT_TRUE(Free(node(1), objects[i]).ok());
  auto round_state = [&] {
    return RunOn<absl::StatusOr<size_t>>(node(1), 0, [](alloc::ThreadAllocator& a, auto finish) {
      finish(a.retired_blocks());
    });
  };
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(*round_state(), 1u) << "the round waits for node 3's reader";
  const char* base = node(1).allocator().blocks().FindRegion(objects[0].addr.region())->base();
  EXPECT_EQ(alloc::BlockState::Decode(alloc::LoadBlockWord(base, first_unit)).kind,
            alloc::BlockKind::kSlab);
  reader->Exit();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (*round_state() != 0u && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(*round_state(), 0u);
  EXPECT_EQ(alloc::BlockState::Decode(alloc::LoadBlockWord(base, first_unit)).kind,
            alloc::BlockKind::kFree);
  // The release reaches the backups too (not awaited by the primary: poll).
  const Region* copy = node(2).backups().Find(objects[0].addr.region());
  ASSERT_NE(copy, nullptr);
  while (alloc::BlockState::Decode(alloc::LoadBlockWord(copy->base(), first_unit)).kind !=
             alloc::BlockKind::kFree &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(alloc::BlockState::Decode(alloc::LoadBlockWord(copy->base(), first_unit)).kind,
            alloc::BlockKind::kFree);
}

// The path of a lock-free read: another node gets the region's capability from its
// primary and READs the object; the read rule accepts what the writer published and
// refuses a freed object.
TEST_P(AllocClusterTest, AnotherNodeReadsAnObjectOneSided) {
  const uint64_t payload = 300;
  absl::StatusOr<FatPtr> p = Allocate(node(1), payload);
  ASSERT_TRUE(p.ok()) << p.status();
  char* object = node(1).allocator().blocks().FindRegion(p->addr.region())->base() + p->addr.offset();
  std::string data(payload, '\0');
  for (size_t i = 0; i < payload; ++i) data[i] = static_cast<char>('a' + i % 26);
  const uint64_t v = LoadHeaderWord(object + kVersionOffset);
  ASSERT_TRUE(LockObject(object, v));
  WriteLockedObject(object, p->addr.offset(), v, data);

  // Node 2's buffer for what it reads.
  absl::StatusOr<Region> buffer = Region::Create(kFirstPrivateRegion + 1000, 1 << 20);
  ASSERT_TRUE(buffer.ok());
  absl::StatusOr<RegisteredRegion> local = node(2).fabric().RegisterRegion(*buffer);
  ASSERT_TRUE(local.ok()) << local.status();
  auto read = [&](RegionId region) -> absl::StatusOr<CopyCheck> {
    return RunOn<absl::StatusOr<CopyCheck>>(node(2), 0, [&, region](alloc::ThreadAllocator&, auto finish) {
      MsgThread& thread = node(2).messenger().thread(0);
      alloc::RequestRegionCapability(thread, 1, region, [&, finish](absl::StatusOr<RegionCapability> cap) mutable {
        if (!cap.ok()) {
          finish(cap.status());
          return;
        }
        auto held = std::make_shared<RegionCapability>(*cap);
        WorkRequest wr;
        wr.opcode = Opcode::kRead;
        wr.local = local->local.base;
        wr.lkey = local->local.lkey;
        wr.length = static_cast<uint32_t>(StoredBytes(p->addr.offset(), payload));
        wr.remote = held.get();
        wr.remote_offset = p->addr.offset();
        absl::Status posted = thread.PostOneSided(1, wr, [&, held, finish](const Completion& c) mutable {
          if (c.status != CompletionStatus::kSuccess) {
            finish(absl::InternalError(CompletionStatusName(c.status)));
            return;
          }
          finish(CheckCopy(local->local.base, p->addr.offset(), payload, p->incarnation, c.torn));
        });
        if (!posted.ok()) finish(posted);
      });
    });
  };
  absl::StatusOr<CopyCheck> seen = read(p->addr.region());
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, CopyCheck::kAccepted);
  std::string back(payload, '\0');
  ReadPayload(local->local.base, p->addr.offset(), back);
  EXPECT_EQ(back, data);

  ASSERT_TRUE(Free(node(1), *p).ok());
  seen = read(p->addr.region());
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, CopyCheck::kNotAllocated);

  absl::StatusOr<CopyCheck> nowhere = read(p->addr.region() + 1);
  EXPECT_EQ(nowhere.status().code(), absl::StatusCode::kNotFound) << nowhere.status();
  (void)node(2).fabric().DeregisterRegion(kFirstPrivateRegion + 1000);
}

TEST_P(AllocClusterTest, MalformedRequestsAreRefused) {
  const std::string tag(1, static_cast<char>(alloc::kAllocWireFormat));
  absl::Status s = Call(node(2), 1, alloc::kRemoteAllocMsgId, tag + "xy");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = Call(node(2), 1, alloc::kRemoteAllocMsgId, std::string(13, '\x07'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s << " (wrong tag)";
  s = Call(node(2), 1, alloc::kRemoteFreeMsgId, "");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = Call(node(2), 1, alloc::kBackupRegionMsgId, tag + std::string(12, '\0'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s << " (a zero-byte region)";
  // A block-table entry for a region node 1 holds no copy of: refused as retryable (after
  // a configuration change a primary may replicate a new block to a backup whose copy is
  // still on its way), and nothing is applied.
  std::string block = tag;
  const uint32_t fields[3] = {12345, 1, 1};
  block.append(reinterpret_cast<const char*>(fields), sizeof(fields));
  block.append(8, '\0');
  s = Call(node(2), 1, alloc::kBlockStateMsgId, block);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "no backup of region 12345 is held here")) << s;
  // Length disagreeing with the count.
  s = Call(node(2), 1, alloc::kBlockStateMsgId, block + "z");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // The node still serves.
  EXPECT_TRUE(Allocate(node(1), 64).ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, AllocClusterTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm::node
