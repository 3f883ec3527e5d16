// The fabric contract (fabric.h), checked for each backend with two fabrics in one
// process: an initiator and a target that owns a registered region.
#include "farm/fabric/fabric.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/base/cpu_copy.h"
#include "farm/fabric/socket_util.h"
#include "farm/fabric/tcp/tcp_wire.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"

namespace farm {
namespace {

using testing::TestFabricOptions;
using testing::WaitForCompletion;

constexpr uint64_t kRegionSize = 1 << 20;

class FabricTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    target_ = MakeFabric();
    ASSERT_TRUE(target_->Listen([this](absl::string_view hello) -> absl::StatusOr<AcceptResult> {
                  last_hello_ = std::string(hello);
                  if (hello == "refuse me") return absl::PermissionDeniedError("not welcome");
                  return AcceptResult{"welcome", nullptr};
                }).ok());
    target_region_ = MakeRegion(7);
    absl::StatusOr<RegisteredRegion> reg = target_->RegisterRegion(*target_region_);
    ASSERT_TRUE(reg.ok()) << reg.status();
    cap_ = reg->capability;

    initiator_ = MakeFabric();
    local_region_ = MakeRegion(kFirstPrivateRegion);
    absl::StatusOr<RegisteredRegion> local = initiator_->RegisterRegion(*local_region_);
    ASSERT_TRUE(local.ok());
    local_ = local->local;
    auto cq = initiator_->CreateCompletionQueue();
    ASSERT_TRUE(cq.ok());
    cq_ = std::move(*cq);
    absl::StatusOr<Connection> conn = initiator_->Connect(target_->locator(), "hi", cq_.get(), 42);
    ASSERT_TRUE(conn.ok()) << conn.status();
    EXPECT_EQ(conn->reply, "welcome");
    EXPECT_EQ(last_hello_, "hi");
    ep_ = std::move(conn->endpoint);
  }

  std::unique_ptr<Fabric> MakeFabric(FabricOptions options) {
    absl::StatusOr<std::unique_ptr<Fabric>> f = Fabric::Create(options);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? std::move(*f) : nullptr;
  }
  std::unique_ptr<Fabric> MakeFabric() { return MakeFabric(TestFabricOptions(GetParam())); }

  // A second initiator with its own (small) limits, connected to the target.
  struct SmallInitiator {
    std::unique_ptr<Fabric> fabric;
    absl::StatusOr<RegisteredRegion> local;
    absl::StatusOr<std::unique_ptr<CompletionQueue>> cq;
    absl::StatusOr<Connection> conn;
  };
  void ConnectSmall(const FabricOptions& options, SmallInitiator& out) {
    out.fabric = MakeFabric(options);
    ASSERT_NE(out.fabric, nullptr);
    out.local = out.fabric->RegisterRegion(*local_region_);
    ASSERT_TRUE(out.local.ok()) << out.local.status();
    out.cq = out.fabric->CreateCompletionQueue();
    ASSERT_TRUE(out.cq.ok()) << out.cq.status();
    out.conn = out.fabric->Connect(target_->locator(), "", out.cq->get(), 1);
    ASSERT_TRUE(out.conn.ok()) << out.conn.status();
  }
  std::unique_ptr<Region> MakeRegion(RegionId id) {
    absl::StatusOr<Region> r = Region::Create(id, kRegionSize);
    EXPECT_TRUE(r.ok());
    return std::make_unique<Region>(std::move(*r));
  }

  char* local(uint64_t offset = 0) { return local_.base + offset; }
  char* remote(uint64_t offset = 0) { return target_region_->base() + offset; }

  WorkRequest Op(Opcode op, uint64_t remote_offset, uint32_t length, uint64_t local_offset = 0) {
    WorkRequest wr;
    wr.wr_id = ++next_wr_id_;
    wr.opcode = op;
    wr.local = local(local_offset);
    wr.length = length;
    wr.lkey = local_.lkey;
    wr.remote = &cap_;
    wr.remote_offset = remote_offset;
    return wr;
  }

  // Posts and waits for the completion; checks it belongs to the request.
  Completion Run(const WorkRequest& wr) {
    absl::Status posted = ep_->Post(wr);
    EXPECT_TRUE(posted.ok()) << posted;
    absl::StatusOr<Completion> c = WaitForCompletion(*cq_);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return {};
    EXPECT_EQ(c->wr_id, wr.wr_id);
    EXPECT_EQ(c->opcode, wr.opcode);
    return *c;
  }

  // Regions outlive the fabrics that registered them (destroyed in reverse order).
  std::unique_ptr<Region> target_region_, local_region_;
  std::unique_ptr<Fabric> target_, initiator_;
  RegionCapability cap_;
  LocalRegion local_;
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<Endpoint> ep_;
  std::string last_hello_;
  uint64_t next_wr_id_ = 0;
};

TEST_P(FabricTest, WriteThenReadRoundTrips) {
  for (uint32_t len : {1u, 7u, 64u, 4096u, 300000u}) {
    for (uint32_t i = 0; i < len; ++i) local()[i] = static_cast<char>(i * 7 + len);
    Completion w = Run(Op(Opcode::kWrite, 1000, len));
    ASSERT_EQ(w.status, CompletionStatus::kSuccess);
    EXPECT_EQ(w.byte_len, len);
    ASSERT_EQ(std::memcmp(remote(1000), local(), len), 0) << len;

    std::memset(local(kRegionSize / 2), 0, len);
    Completion r = Run(Op(Opcode::kRead, 1000, len, kRegionSize / 2));
    ASSERT_EQ(r.status, CompletionStatus::kSuccess);
    EXPECT_FALSE(r.torn);
    ASSERT_EQ(std::memcmp(local(kRegionSize / 2), remote(1000), len), 0) << len;
  }
}

TEST_P(FabricTest, CompareSwapAndFetchAddReturnTheOldValue) {
  uint64_t* word = reinterpret_cast<uint64_t*>(remote(64));
  *word = 10;
  WorkRequest faa = Op(Opcode::kFetchAdd, 64, 8);
  faa.compare_add = 5;
  ASSERT_EQ(Run(faa).status, CompletionStatus::kSuccess);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local()), 10u);
  EXPECT_EQ(*word, 15u);

  WorkRequest cas = Op(Opcode::kCompareSwap, 64, 8);
  cas.compare_add = 14;  // wrong expectation: no swap
  cas.swap = 99;
  ASSERT_EQ(Run(cas).status, CompletionStatus::kSuccess);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local()), 15u);
  EXPECT_EQ(*word, 15u);
  cas.wr_id = ++next_wr_id_;
  cas.compare_add = 15;
  ASSERT_EQ(Run(cas).status, CompletionStatus::kSuccess);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local()), 15u);
  EXPECT_EQ(*word, 99u);
}

TEST_P(FabricTest, OutOfBoundsOpsFailAndChangeNothing) {
  std::memset(remote(), 0x5A, kRegionSize);
  std::memset(local(), 0x11, 64);
  const struct {
    uint64_t offset;
    uint32_t length;
  } cases[] = {{kRegionSize - 4, 8}, {kRegionSize, 1}, {kRegionSize + 4096, 8},
               {~uint64_t{0} - 2, 8}, {uint64_t{1} << 40, 8}};
  for (const auto& c : cases) {
    for (Opcode op : {Opcode::kWrite, Opcode::kRead}) {
      EXPECT_EQ(Run(Op(op, c.offset, c.length)).status, CompletionStatus::kRemoteAccessError)
          << OpcodeName(op) << " at " << c.offset;
    }
  }
  for (uint64_t offset : {kRegionSize, kRegionSize + 8, ~uint64_t{7}, uint64_t{1} << 40}) {
    for (Opcode op : {Opcode::kFetchAdd, Opcode::kCompareSwap}) {
      WorkRequest wr = Op(op, offset, 8);
      wr.compare_add = 0x5A5A5A5A5A5A5A5A;
      wr.swap = 1;
      EXPECT_EQ(Run(wr).status, CompletionStatus::kRemoteAccessError)
          << OpcodeName(op) << " at " << offset;
    }
  }
  for (uint64_t i = 0; i < kRegionSize; ++i) ASSERT_EQ(remote()[i], 0x5A) << i;
  for (int i = 0; i < 64; ++i) ASSERT_EQ(local()[i], 0x11) << "a failed READ wrote locally";
}

TEST_P(FabricTest, WrongCapabilityFailsAndChangesNothing) {
  std::memset(remote(), 0, 64);
  std::memset(local(), 0x77, 64);
  const RegionCapability good = cap_;
  const bool verbs = GetParam() == "verbs";
  RegionCapability wrong_key = good;
  // CPU backends: same slot, wrong secret bits. verbs: another 32-bit key (rkeys are
  // index << 8 | key byte on most devices).
  wrong_key.rkey ^= verbs ? uint64_t{1} << 8 : uint64_t{1} << 40;
  RegionCapability wrong_region = good;
  wrong_region.region += 1;
  RegionCapability wrong_slot = good;
  wrong_slot.rkey ^= 1;
  std::vector<RegionCapability> wrong = {wrong_key, wrong_slot};
  // The NIC checks rkey and address range; the region id is not on the wire, so a
  // capability that differs only there still reaches the region on verbs.
  if (!verbs) wrong.push_back(wrong_region);
  for (const RegionCapability& cap : wrong) {
    cap_ = cap;
    EXPECT_EQ(Run(Op(Opcode::kWrite, 0, 64)).status, CompletionStatus::kRemoteAccessError);
    EXPECT_EQ(Run(Op(Opcode::kRead, 0, 64)).status, CompletionStatus::kRemoteAccessError);
  }
  for (int i = 0; i < 64; ++i) ASSERT_EQ(remote()[i], 0);
  cap_ = good;
  EXPECT_EQ(Run(Op(Opcode::kWrite, 0, 64)).status, CompletionStatus::kSuccess);
  EXPECT_EQ(remote()[0], 0x77);
}

TEST_P(FabricTest, DeregisteredRegionIsRevokedAtOnce) {
  ASSERT_EQ(Run(Op(Opcode::kRead, 0, 8)).status, CompletionStatus::kSuccess);
  ASSERT_TRUE(target_->DeregisterRegion(7).ok());
  std::memset(local(), 0x33, 8);
  EXPECT_EQ(Run(Op(Opcode::kWrite, 0, 8)).status, CompletionStatus::kRemoteAccessError);
  EXPECT_NE(remote()[0], 0x33);
  // Registering again issues a new key; the old one stays revoked.
  absl::StatusOr<RegisteredRegion> again = target_->RegisterRegion(*target_region_);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->capability.rkey, cap_.rkey);
  EXPECT_EQ(Run(Op(Opcode::kWrite, 0, 8)).status, CompletionStatus::kRemoteAccessError);
  cap_ = again->capability;
  EXPECT_EQ(Run(Op(Opcode::kWrite, 0, 8)).status, CompletionStatus::kSuccess);
  EXPECT_EQ(remote()[0], 0x33);
}

TEST_P(FabricTest, MalformedRequestsAreRefusedAtPost) {
  WorkRequest misaligned = Op(Opcode::kCompareSwap, 4, 8);
  EXPECT_EQ(ep_->Post(misaligned).code(), absl::StatusCode::kInvalidArgument);
  WorkRequest long_atomic = Op(Opcode::kFetchAdd, 8, 16);
  EXPECT_EQ(ep_->Post(long_atomic).code(), absl::StatusCode::kInvalidArgument);
  WorkRequest empty = Op(Opcode::kRead, 0, 0);
  EXPECT_EQ(ep_->Post(empty).code(), absl::StatusCode::kInvalidArgument);
  WorkRequest no_cap = Op(Opcode::kRead, 0, 8);
  no_cap.remote = nullptr;
  EXPECT_EQ(ep_->Post(no_cap).code(), absl::StatusCode::kInvalidArgument);
  WorkRequest notify_read = Op(Opcode::kRead, 0, 8);
  notify_read.notify = 0;
  EXPECT_EQ(ep_->Post(notify_read).code(), absl::StatusCode::kInvalidArgument);
  if (GetParam() == "verbs") {
    RegionCapability foreign = cap_;
    foreign.rkey |= uint64_t{1} << 40;  // no verbs key has more than 32 bits
    WorkRequest wr = Op(Opcode::kRead, 0, 8);
    wr.remote = &foreign;
    EXPECT_EQ(ep_->Post(wr).code(), absl::StatusCode::kInvalidArgument);
  }
  Completion c;
  EXPECT_EQ(cq_->Poll(absl::MakeSpan(&c, 1)), 0) << "a refused post produced a completion";
}

TEST_P(FabricTest, LocalBufferOutsideItsRegionIsALocalProtectionError) {
  std::vector<char> unregistered(64, 1);
  WorkRequest wr = Op(Opcode::kWrite, 0, 64);
  wr.local = unregistered.data();
  EXPECT_EQ(Run(wr).status, CompletionStatus::kLocalProtectionError);
  WorkRequest overrun = Op(Opcode::kRead, 0, 64, kRegionSize - 32);
  EXPECT_EQ(Run(overrun).status, CompletionStatus::kLocalProtectionError);
}

TEST_P(FabricTest, CompletionsKeepPostOrderAndUnsignaledSuccessIsSilent) {
  std::vector<WorkRequest> wrs;
  for (int i = 0; i < 20; ++i) {
    WorkRequest wr = Op(i % 3 == 0 ? Opcode::kRead : Opcode::kWrite, 128 * i, 64, 64 * i);
    wr.signaled = i % 2 == 0;
    if (i == 7) wr.remote_offset = kRegionSize;  // fails remotely: reported though unsignaled
    if (i == 9) wr.local = &wrs;                 // fails locally: reported in order
    wrs.push_back(wr);
  }
  for (const WorkRequest& wr : wrs) ASSERT_TRUE(ep_->Post(wr).ok());
  std::vector<uint64_t> expected;
  for (const WorkRequest& wr : wrs) {
    if (wr.signaled || wr.wr_id == wrs[7].wr_id || wr.wr_id == wrs[9].wr_id) {
      expected.push_back(wr.wr_id);
    }
  }
  std::vector<uint64_t> got;
  while (got.size() < expected.size()) {
    absl::StatusOr<Completion> c = WaitForCompletion(*cq_);
    ASSERT_TRUE(c.ok());
    got.push_back(c->wr_id);
    if (c->wr_id == wrs[7].wr_id) {
      EXPECT_EQ(c->status, CompletionStatus::kRemoteAccessError);
    } else if (c->wr_id == wrs[9].wr_id) {
      EXPECT_EQ(c->status, CompletionStatus::kLocalProtectionError);
    } else {
      EXPECT_EQ(c->status, CompletionStatus::kSuccess);
    }
  }
  EXPECT_EQ(got, expected);
  Completion extra;
  EXPECT_EQ(cq_->Poll(absl::MakeSpan(&extra, 1)), 0);
}

TEST_P(FabricTest, PostBatchExecutesInOrderAndStopsAtTheFirstBadRequest) {
  for (int i = 0; i < 100; ++i) std::memset(remote(i * 64), i + 1, 64);
  std::vector<WorkRequest> wrs;
  for (int i = 0; i < 100; ++i) wrs.push_back(Op(Opcode::kRead, i * 64, 64, i * 64));
  size_t posted = 0;
  ASSERT_TRUE(ep_->PostBatch(wrs, &posted).ok());
  EXPECT_EQ(posted, wrs.size());
  for (const WorkRequest& wr : wrs) {
    absl::StatusOr<Completion> c = WaitForCompletion(*cq_);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->wr_id, wr.wr_id) << "out of order";
    ASSERT_EQ(c->status, CompletionStatus::kSuccess);
  }
  for (int i = 0; i < 100; ++i) ASSERT_EQ(local(i * 64)[63], static_cast<char>(i + 1));

  // A malformed request stops the batch there; what came before it runs.
  std::vector<WorkRequest> mixed = {Op(Opcode::kWrite, 0, 8), Op(Opcode::kRead, 8, 8),
                                    Op(Opcode::kFetchAdd, 3, 8), Op(Opcode::kRead, 16, 8)};
  absl::Status s = ep_->PostBatch(mixed, &posted);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(posted, 2u);
  for (size_t i = 0; i < 2; ++i) {
    absl::StatusOr<Completion> c = WaitForCompletion(*cq_);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->wr_id, mixed[i].wr_id);
  }
  Completion extra;
  EXPECT_EQ(cq_->Poll(absl::MakeSpan(&extra, 1)), 0);
}

TEST_P(FabricTest, PostBatchStopsWhenTheCompletionQueueIsFull) {
  FabricOptions options = TestFabricOptions(GetParam());
  options.cq_depth = 5;
  SmallInitiator small;
  ASSERT_NO_FATAL_FAILURE(ConnectSmall(options, small));
  auto& [fabric, local, cq, conn] = small;
  std::vector<WorkRequest> wrs(8, Op(Opcode::kRead, 0, 8));
  for (WorkRequest& wr : wrs) wr.lkey = local->local.lkey;
  size_t posted = 0;
  EXPECT_EQ(conn->endpoint->PostBatch(wrs, &posted).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(posted, 5u);
  for (size_t i = 0; i < posted; ++i) ASSERT_TRUE(WaitForCompletion(**cq).ok());
}

TEST_P(FabricTest, SendQueueDepthIsEnforced) {
  FabricOptions options = TestFabricOptions(GetParam());
  options.max_outstanding = 4;
  options.cq_depth = 6;
  SmallInitiator small;
  ASSERT_NO_FATAL_FAILURE(ConnectSmall(options, small));
  auto& [fabric, local, cq, conn] = small;
  WorkRequest wr = Op(Opcode::kRead, 0, 8);
  wr.lkey = local->local.lkey;
  int accepted = 0;
  absl::Status last;
  for (int i = 0; i < 10; ++i) {
    last = conn->endpoint->Post(wr);
    if (!last.ok()) break;
    ++accepted;
  }
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted);
  // shm completes at once, so its bound is the queue depth; tcp's and verbs' is the
  // send queue.
  EXPECT_EQ(accepted, GetParam() == "shm" ? 6 : 4);
  for (int i = 0; i < accepted; ++i) ASSERT_TRUE(WaitForCompletion(**cq).ok());
  EXPECT_TRUE(conn->endpoint->Post(wr).ok()) << "room again after polling";
  ASSERT_TRUE(WaitForCompletion(**cq).ok());
}

TEST_P(FabricTest, AcceptHandlerCanRefuseWithAReason) {
  auto cq = initiator_->CreateCompletionQueue();
  ASSERT_TRUE(cq.ok());
  absl::StatusOr<Connection> conn = initiator_->Connect(target_->locator(), "refuse me", cq->get(), 1);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(conn.status().message().find("not welcome"), std::string::npos) << conn.status();
}

TEST_P(FabricTest, PeerWithoutTheSecretIsRefusedBeforeTouchingMemory) {
  FabricOptions options = TestFabricOptions(GetParam());
  options.cluster_secret = "some-other-cluster-secret-xyz";
  std::unique_ptr<Fabric> stranger = MakeFabric(options);
  auto cq = stranger->CreateCompletionQueue();
  ASSERT_TRUE(cq.ok());
  last_hello_.clear();
  absl::StatusOr<Connection> conn = stranger->Connect(target_->locator(), "let me in", cq->get(), 1);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kUnauthenticated) << conn.status();
  EXPECT_EQ(last_hello_, "") << "the accept handler saw an unauthenticated hello";
  // The real initiator is unaffected.
  EXPECT_EQ(Run(Op(Opcode::kRead, 0, 8)).status, CompletionStatus::kSuccess);
}

TEST_P(FabricTest, GarbageBeforeTheHandshakeIsDroppedWithoutTouchingMemory) {
  std::memset(remote(), 0, 64);
  const std::string locator = target_->locator();
  absl::StatusOr<UniqueFd> fd =
      GetParam() == "shm"
          ? ConnectUnix(locator.substr(4), absl::Now() + absl::Seconds(5))
          : ConnectTcp(locator.substr(locator.find(':') + 1), absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(fd.ok());
  // A well-formed WRITE frame with a valid capability, but no handshake.
  tcp_wire::OpRequest req{};
  req.kind = tcp_wire::kOpRequest;
  req.opcode = static_cast<uint8_t>(Opcode::kWrite);
  req.length = 8;
  req.region = cap_.region;
  req.rkey = cap_.rkey;
  std::string frame(reinterpret_cast<const char*>(&req), sizeof(req));
  frame.append("XXXXXXXX");
  ASSERT_TRUE(SendAll(fd->get(), frame.data(), frame.size(), absl::Now() + absl::Seconds(5)).ok());
  // The server closes the connection; nothing was written.
  pollfd p{fd->get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  char buf[256];
  EXPECT_EQ(::recv(fd->get(), buf, sizeof(buf), 0), 0) << "server answered an unauthenticated peer";
  for (int i = 0; i < 64; ++i) ASSERT_EQ(remote()[i], 0);
  EXPECT_EQ(Run(Op(Opcode::kRead, 0, 8)).status, CompletionStatus::kSuccess);
}

TEST_P(FabricTest, WriteWithNotifyRingsTheTargetsDoorbell) {
  absl::StatusOr<std::unique_ptr<Doorbell>> bell = target_->CreateDoorbell();
  ASSERT_TRUE(bell.ok());
  pollfd p{(*bell)->fd(), POLLIN, 0};
  // Not armed: a notify costs nothing and does not wake.
  WorkRequest wr = Op(Opcode::kWrite, 0, 8);
  wr.notify = (*bell)->id();
  ASSERT_EQ(Run(wr).status, CompletionStatus::kSuccess);
  EXPECT_EQ(::poll(&p, 1, 50), 0);
  // Armed: the write wakes the waiter, and the data is there when it does.
  (*bell)->Arm();
  std::memcpy(local(), "ring!!!", 8);
  wr.wr_id = ++next_wr_id_;
  ASSERT_EQ(Run(wr).status, CompletionStatus::kSuccess);
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_STREQ(remote(), "ring!!!");
  (*bell)->Disarm();
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "Disarm drains the eventfd";
}

// tcp holds an unsignaled WRITE without notify back to send it with the next request;
// with no next request, the next Poll must send it.
TEST_P(FabricTest, HeldBackWriteGoesOutOnTheNextPoll) {
  std::memset(remote(), 0, 64);
  char expected[16] = "held back";  // two whole words: each lands with one atomic store
  std::memcpy(local(), expected, sizeof(expected));
  WorkRequest wr = Op(Opcode::kWrite, 0, sizeof(expected));
  wr.signaled = false;
  ASSERT_TRUE(ep_->Post(wr).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  // The responder thread writes the target while we watch: read words atomically. The
  // WRITE lands in address order, so once the second word is there the first is too.
  uint64_t second_word;
  std::memcpy(&second_word, expected + 8, 8);
  while (LoadWordAcquire(remote(8)) != second_word && absl::Now() < deadline) {
    Completion c;
    EXPECT_EQ(cq_->Poll(absl::MakeSpan(&c, 1)), 0) << "an unsignaled success produced a completion";
  }
  ASSERT_EQ(LoadWordAcquire(remote(8)), second_word);
  EXPECT_STREQ(remote(), "held back");
}

TEST_P(FabricTest, ZeroLengthWriteWithNotifyOnlyRings) {
  absl::StatusOr<std::unique_ptr<Doorbell>> bell = target_->CreateDoorbell();
  ASSERT_TRUE(bell.ok());
  std::memset(remote(), 0x42, 64);
  WorkRequest wake = Op(Opcode::kWrite, 0, 0);
  EXPECT_EQ(ep_->Post(wake).code(), absl::StatusCode::kInvalidArgument)
      << "a zero-length WRITE without notify does nothing and is refused";
  wake.notify = (*bell)->id();
  (*bell)->Arm();
  ASSERT_EQ(Run(wake).status, CompletionStatus::kSuccess);
  pollfd p{(*bell)->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 5000), 1);
  (*bell)->Disarm();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(remote()[i], 0x42);
}

TEST_P(FabricTest, TargetGoneFailsTheEndpoint) {
  ASSERT_EQ(Run(Op(Opcode::kRead, 0, 8)).status, CompletionStatus::kSuccess);
  target_.reset();  // closes every connection
  bool disconnected = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!disconnected && absl::Now() < deadline) {
    Completion c;
    if (cq_->Poll(absl::MakeSpan(&c, 1)) == 1) {
      if (c.opcode == Opcode::kDisconnect) {
        EXPECT_EQ(c.wr_id, 42u) << "the disconnect carries the endpoint's context";
        disconnected = true;
      }
    }
  }
  ASSERT_TRUE(disconnected);
  EXPECT_FALSE(ep_->status().ok());
  EXPECT_EQ(ep_->Post(Op(Opcode::kRead, 0, 8)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(FabricTest, ConnectToNobodyIsUnavailable) {
  auto cq = initiator_->CreateCompletionQueue();
  ASSERT_TRUE(cq.ok());
  const std::string nowhere = GetParam() == "shm" ? "shm:/tmp/farm-test-nobody-listens.sock"
                                                 : GetParam() + ":127.0.0.1:1";
  absl::StatusOr<Connection> conn = initiator_->Connect(nowhere, "", cq->get(), 1);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kUnavailable) << conn.status();
}

TEST_P(FabricTest, ConnectToTheOtherBackendIsAClearError) {
  auto cq = initiator_->CreateCompletionQueue();
  ASSERT_TRUE(cq.ok());
  const std::string other = GetParam() == "shm" ? "tcp:127.0.0.1:1" : "shm:/tmp/x.sock";
  absl::StatusOr<Connection> conn = initiator_->Connect(other, "", cq->get(), 1);
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(FabricTest, RegistrationErrors) {
  EXPECT_EQ(target_->RegisterRegion(*target_region_).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(target_->DeregisterRegion(12345).code(), absl::StatusCode::kNotFound);
  FabricOptions options = TestFabricOptions(GetParam());
  options.max_regions = 1;
  std::unique_ptr<Fabric> tiny = MakeFabric(options);
  ASSERT_TRUE(tiny->RegisterRegion(*target_region_).ok());
  EXPECT_EQ(tiny->RegisterRegion(*local_region_).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(CapabilityTextTest, RoundTripsAndRejectsGarbage) {
  const RegionCapability cap{0xF0000001, 0, uint64_t{2} << 30, 0x1234567890ABCDEF, 0x7F00DEAD0000};
  absl::StatusOr<RegionCapability> back = DecodeCapability(EncodeCapability(cap));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, cap);
  for (const char* bad : {"", "1:2:3", "1:2:3:4:5", "x:2:3:4", "100000000:1:1:1"}) {
    EXPECT_EQ(DecodeCapability(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(FabricCreateTest, RejectsBadOptions) {
  FabricOptions options = TestFabricOptions("tcp");
  options.backend = "carrier-pigeon";
  EXPECT_EQ(Fabric::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = TestFabricOptions("tcp");
  options.cluster_secret = "short";
  EXPECT_EQ(Fabric::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = TestFabricOptions("tcp");
  options.listen_address = "0.0.0.0:0";
  EXPECT_EQ(Fabric::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = TestFabricOptions("shm");
  options.listen_address = "";
  EXPECT_EQ(Fabric::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FabricCreateTest, VerbsWithoutTheDeviceIsNotFound) {
  FabricOptions options = TestFabricOptions("verbs");
  options.device = "no-such-rdma-device";
  absl::StatusOr<std::unique_ptr<Fabric>> f = Fabric::Create(options);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound) << f.status();
  // Without RDMA in the kernel ibv_get_device_list returns NULL: still a clear error.
  EXPECT_NE(f.status().message().find("RDMA device"), std::string::npos) << f.status();
}

TEST(FabricCreateTest, ShmRefusesASocketPathInUse) {
  FabricOptions options = TestFabricOptions("shm");
  absl::StatusOr<std::unique_ptr<Fabric>> first = Fabric::Create(options);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Listen([](absl::string_view) { return AcceptResult{}; }).ok());
  EXPECT_EQ(Fabric::Create(options).status().code(), absl::StatusCode::kAlreadyExists);
}

INSTANTIATE_TEST_SUITE_P(Backends, FabricTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
