// Epoch-based reclamation: the per-machine EpochManager (participants, nesting,
// quiescence waits, a reclaimer racing readers) and the cluster-wide end-of-epoch round
// over messaging.
#include "alloc/epoch.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "alloc/end_of_epoch.h"
#include "alloc/messages.h"
#include "farm/base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/msg_test_node.h"

namespace farm::alloc {
namespace {

using ::testing::HasSubstr;
using testing::MsgTestNode;
using testing::Scaled;
using testing::WaitUntil;

// How long a wait that must not complete is given to complete anyway.
constexpr absl::Duration kMustNotComplete = absl::Milliseconds(100);
constexpr absl::Duration kPromptly = absl::Seconds(5);

EpochParticipant MustRegister(EpochManager& epochs) {
  absl::StatusOr<EpochParticipant> p = epochs.Register();
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : EpochParticipant();
}

// --- Participants ---

TEST(EpochParticipantTest, NestedEnterPublishesOnceAndOutermostExitClears) {
  EpochManager epochs;
  EpochParticipant p = MustRegister(epochs);
  EXPECT_FALSE(p.inside());
  p.Enter();
  EXPECT_EQ(p.epoch(), 1u);
  EXPECT_EQ(epochs.active_participants(), 1u);
  p.Enter();
  EXPECT_EQ(p.depth(), 2u);
  p.Exit();
  EXPECT_TRUE(p.inside());
  EXPECT_EQ(epochs.active_participants(), 1u) << "an inner Exit must not clear the slot";
  p.Exit();
  EXPECT_FALSE(p.inside());
  EXPECT_EQ(epochs.active_participants(), 0u);
  p.Exit();  // unmatched: ignored
  EXPECT_EQ(p.depth(), 0u);
  {
    EpochGuard guard(p);
    EXPECT_TRUE(p.inside());
    EXPECT_EQ(epochs.active_participants(), 1u);
  }
  EXPECT_EQ(epochs.active_participants(), 0u);
}

TEST(EpochParticipantTest, RegisterIsExhaustedAndReusesReleasedSlots) {
  EpochManager epochs(3);
  std::vector<EpochParticipant> ps;
  for (int i = 0; i < 3; ++i) ps.push_back(MustRegister(epochs));
  EXPECT_EQ(epochs.registered_participants(), 3u);
  absl::StatusOr<EpochParticipant> extra = epochs.Register();
  ASSERT_FALSE(extra.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(extra.status())) << extra.status();

  const size_t released = ps[1].slot_index();
  ps.erase(ps.begin() + 1);
  EXPECT_EQ(epochs.registered_participants(), 2u);
  EpochParticipant again = MustRegister(epochs);
  EXPECT_EQ(again.slot_index(), released);
  EXPECT_FALSE(epochs.Register().ok());
}

TEST(EpochParticipantTest, MoveTransfersTheSlot) {
  EpochManager epochs(2);
  EpochParticipant a = MustRegister(epochs);
  const size_t slot = a.slot_index();
  a.Enter();
  EpochParticipant b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_TRUE(b.inside());
  EXPECT_EQ(b.slot_index(), slot);
  EXPECT_EQ(epochs.registered_participants(), 1u);
  b.Exit();
  EpochParticipant c = MustRegister(epochs);
  c = std::move(b);  // releases c's own slot
  EXPECT_EQ(epochs.registered_participants(), 1u);
  EXPECT_EQ(c.slot_index(), slot);
}

// --- AwaitQuiescence on one machine ---

class EpochManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto table = DoorbellTable::Create(4);
    ASSERT_TRUE(table.ok()) << table.status();
    doorbells_ = std::move(*table);
    auto bell = doorbells_->Allocate();
    ASSERT_TRUE(bell.ok()) << bell.status();
    auto loop = EventLoop::Create(std::move(*bell));
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = std::make_unique<LoopThread>(std::move(*loop));
  }
  EventLoop* loop() { return &loop_->loop(); }

  // One AwaitQuiescence and what became of it.
  struct Wait {
    Notification completed;
    std::atomic<bool> on_loop_thread{false};
  };
  std::shared_ptr<Wait> StartWait(EpochManager& epochs) {
    auto wait = std::make_shared<Wait>();
    epochs.AwaitQuiescence(loop(), [this, wait] {
      wait->on_loop_thread = loop()->InLoopThread();
      wait->completed.Notify();
    });
    return wait;
  }
  static bool Completes(Wait& wait) {
    return wait.completed.WaitForNotificationWithTimeout(kPromptly);
  }
  static bool StaysPending(Wait& wait) {
    return !wait.completed.WaitForNotificationWithTimeout(kMustNotComplete);
  }

  std::unique_ptr<DoorbellTable> doorbells_;
  std::unique_ptr<LoopThread> loop_;
};

TEST_F(EpochManagerTest, CompletesAtOnceWhenEveryoneIsIdle) {
  EpochManager epochs;
  EpochParticipant p = MustRegister(epochs), q = MustRegister(epochs);
  p.Enter();
  p.Exit();
  auto wait = StartWait(epochs);
  EXPECT_EQ(epochs.current_epoch(), 2u);
  ASSERT_TRUE(Completes(*wait));
  EXPECT_TRUE(wait->on_loop_thread);
  EXPECT_EQ(epochs.pending_waiters(), 0u);
}

TEST_F(EpochManagerTest, WaitsForAnOperationThatStartedBeforeAndCompletesWhenItExits) {
  EpochManager epochs;
  EpochParticipant p = MustRegister(epochs);
  p.Enter();
  auto wait = StartWait(epochs);
  EXPECT_TRUE(StaysPending(*wait));
  EXPECT_EQ(epochs.pending_waiters(), 1u);
  const auto exited = std::chrono::steady_clock::now();
  p.Exit();
  ASSERT_TRUE(Completes(*wait));
  EXPECT_LT(std::chrono::steady_clock::now() - exited, std::chrono::seconds(1));
  EXPECT_TRUE(wait->on_loop_thread);
}

TEST_F(EpochManagerTest, NestedOperationHoldsTheWaitUntilTheOutermostExit) {
  EpochManager epochs;
  EpochParticipant p = MustRegister(epochs);
  p.Enter();
  auto wait = StartWait(epochs);
  p.Enter();  // nested: stays in the old epoch
  EXPECT_EQ(p.epoch(), 1u);
  p.Exit();
  EXPECT_TRUE(StaysPending(*wait));
  p.Exit();
  EXPECT_TRUE(Completes(*wait));
}

TEST_F(EpochManagerTest, DoesNotWaitForAnOperationThatStartedAfterTheRequest) {
  EpochManager epochs;
  EpochParticipant before = MustRegister(epochs), after = MustRegister(epochs);
  before.Enter();
  auto wait = StartWait(epochs);
  after.Enter();
  EXPECT_EQ(after.epoch(), epochs.current_epoch()) << "a newcomer runs in the new epoch";
  EXPECT_TRUE(StaysPending(*wait));
  before.Exit();
  EXPECT_TRUE(Completes(*wait)) << "must not wait for `after`, still inside";
  EXPECT_TRUE(after.inside());
  after.Exit();
}

TEST_F(EpochManagerTest, SeveralWaitersCompleteOldestFirst) {
  EpochManager epochs;
  EpochParticipant p = MustRegister(epochs), q = MustRegister(epochs);
  p.Enter();                         // epoch 1
  auto first = StartWait(epochs);    // needs epoch >= 2
  q.Enter();                         // epoch 2
  auto second = StartWait(epochs);   // needs epoch >= 3
  auto third = StartWait(epochs);    // needs epoch >= 4
  EXPECT_EQ(epochs.pending_waiters(), 3u);
  p.Exit();
  EXPECT_TRUE(Completes(*first));
  EXPECT_TRUE(StaysPending(*second));
  EXPECT_FALSE(third->completed.HasBeenNotified());
  q.Exit();
  EXPECT_TRUE(Completes(*second));
  EXPECT_TRUE(Completes(*third));
  EXPECT_EQ(epochs.pending_waiters(), 0u);
}

TEST_F(EpochManagerTest, ReleasingAParticipantInsideAnOperationEndsIt) {
  EpochManager epochs;
  auto p = std::make_unique<EpochParticipant>(MustRegister(epochs));
  p->Enter();
  auto wait = StartWait(epochs);
  EXPECT_TRUE(StaysPending(*wait));
  p.reset();
  EXPECT_TRUE(Completes(*wait));
  EXPECT_EQ(epochs.registered_participants(), 0u);
}

TEST_F(EpochManagerTest, ACompletedWaitRunsEvenAfterTheManagerIsGone) {
  // Hold the loop so that the completed wait is still queued when the manager dies.
  Notification release_loop;
  loop()->Post([&release_loop] { release_loop.WaitForNotification(); });
  std::atomic<bool> ran{false};
  {
    EpochManager epochs;
    EpochParticipant p = MustRegister(epochs);
    p.Enter();
    epochs.AwaitQuiescence(loop(), [&ran] { ran = true; });
    p.Exit();
    EXPECT_EQ(epochs.pending_waiters(), 0u);
  }
  release_loop.Notify();
  RunInLoop(*loop(), [] {});  // after everything posted before
  EXPECT_TRUE(ran);
}

// --- The stress test: a reclaimer racing lock-free readers ---

// An object whose words all derive from its generation; poisoned before it is freed.
struct Versioned {
  static constexpr uint64_t kPoison = 0xDEADDEADDEADDEADull;
  static constexpr int kWords = 8;
  static constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;
  static constexpr uint64_t kInverse = 0xF1DE83E19937733Dull;  // mod 2^64
  explicit Versioned(uint64_t generation) {
    for (int i = 0; i < kWords; ++i) words[i] = Expected(generation, i);
  }
  static uint64_t Expected(uint64_t generation, int i) {
    return generation * kMultiplier + i;
  }
  // True when the words are one generation's, not poisoned or torn.
  bool Consistent() const {
    const uint64_t generation = words[0] * kInverse;
    for (int i = 0; i < kWords; ++i) {
      if (words[i] == kPoison || words[i] != Expected(generation, i)) return false;
    }
    return true;
  }
  void Poison() {
    for (int i = 0; i < kWords; ++i) words[i] = kPoison;
  }
  uint64_t words[kWords];
};
static_assert(Versioned::kMultiplier * Versioned::kInverse == 1);

TEST_F(EpochManagerTest, StressReadersNeverSeeReclaimedObjects) {
  constexpr int kReaders = 3;
  const uint64_t reclaims = Scaled(50000);
  EpochManager epochs;
  std::atomic<Versioned*> current{new Versioned(0)};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, bad_reads{0}, reregistrations{0};

  auto reader = [&] {
    EpochParticipant p = MustRegister(epochs);
    uint64_t n = 0, bad = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      p.Enter();
      if (n % 7 == 0) p.Enter();  // nested sometimes
      const Versioned* v = current.load(std::memory_order_acquire);
      if (!v->Consistent()) ++bad;
      if (n % 64 == 0) std::this_thread::yield();  // hold it across a reschedule
      if (!v->Consistent()) ++bad;
      if (n % 7 == 0) p.Exit();
      p.Exit();
      if (++n % 1024 == 0) {
        p = MustRegister(epochs);  // the old slot is released after the new one is claimed
        reregistrations.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::yield();  // let the reclaimer and the loop run on 2 cores
      }
    }
    reads.fetch_add(n);
    bad_reads.fetch_add(bad);
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < kReaders; ++i) readers.emplace_back(reader);

  uint64_t waited = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t generation = 1; generation <= reclaims; ++generation) {
    Versioned* old = current.exchange(new Versioned(generation), std::memory_order_acq_rel);
    Notification quiescent;
    epochs.AwaitQuiescence(loop(), [&quiescent] { quiescent.Notify(); });
    if (epochs.pending_waiters() > 0) ++waited;  // a reader was inside the old epoch
    ASSERT_TRUE(quiescent.WaitForNotificationWithTimeout(absl::Seconds(30)));
    old->Poison();
    delete old;
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  stop = true;
  for (auto& t : readers) t.join();
  delete current.load();

  EXPECT_EQ(bad_reads.load(), 0u);
  EXPECT_GT(reads.load(), reclaims) << "readers must have run alongside the reclaimer";
  EXPECT_EQ(epochs.current_epoch(), reclaims + 1);
  EXPECT_EQ(epochs.active_participants(), 0u);
  EXPECT_EQ(epochs.registered_participants(), 0u);
  std::printf("%llu reclaims (%llu waited for a reader), %llu reads, %llu re-registrations "
              "in %.2f s\n",
              static_cast<unsigned long long>(reclaims), static_cast<unsigned long long>(waited),
              static_cast<unsigned long long>(reads.load()),
              static_cast<unsigned long long>(reregistrations.load()),
              std::chrono::duration<double>(elapsed).count());
}

// --- The cluster-wide round ---

class EndOfEpochRoundTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 3;

  void SetUp() override {
    for (int i = 0; i < kNodes; ++i) {
      nodes_[i] = MakeNode(static_cast<NodeId>(i + 1), *epochs_[i]);
      ASSERT_NE(nodes_[i], nullptr);
    }
    for (int i = 0; i < kNodes; ++i) {
      for (int j = i + 1; j < kNodes; ++j) {
        ASSERT_TRUE(nodes_[i]->ConnectTo(*nodes_[j]).ok());
      }
    }
  }

  static std::unique_ptr<MsgTestNode> MakeNode(NodeId id, EpochManager& epochs) {
    MsgTestNode::Options o;
    o.backend = "shm";
    o.id = id;
    o.handlers = [&epochs](Messenger& m) {
      ASSERT_TRUE(RegisterEndOfEpochHandler(m, epochs).ok());
    };
    auto node = MsgTestNode::Create(o);
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? std::move(*node) : nullptr;
  }

  struct RoundOutcome {
    Notification finished;
    std::atomic<int> calls{0};
    absl::Status status;  // written before `finished` is notified
    bool on_calling_thread = false;
  };
  // Starts a round from node `from` (index) on its thread 0.
  std::shared_ptr<RoundOutcome> StartRound(int from, std::vector<NodeId> members,
                                           absl::Duration timeout = absl::ZeroDuration()) {
    auto outcome = std::make_shared<RoundOutcome>();
    MsgTestNode& node = *nodes_[from];
    RunInLoop(node.loop(0), [&, outcome] {
      RunEndOfEpochRound(
          node.thread(0), node.id(), *epochs_[from], std::move(members),
          [&node, outcome](absl::Status status) {
            outcome->status = std::move(status);
            outcome->on_calling_thread = node.loop(0).InLoopThread();
            if (outcome->calls.fetch_add(1) == 0) outcome->finished.Notify();
          },
          timeout);
      EXPECT_FALSE(outcome->finished.HasBeenNotified()) << "done ran inside the call";
    });
    return outcome;
  }
  static std::vector<NodeId> All() { return {1, 2, 3}; }

  // Declared before the nodes: the handlers use them until the messengers are gone.
  std::array<std::unique_ptr<EpochManager>, kNodes> epochs_ = {
      std::make_unique<EpochManager>(), std::make_unique<EpochManager>(),
      std::make_unique<EpochManager>()};
  std::array<std::unique_ptr<MsgTestNode>, kNodes> nodes_;
};

TEST_F(EndOfEpochRoundTest, CompletesWhenEveryMachineIsIdle) {
  auto round = StartRound(0, All());
  ASSERT_TRUE(round->finished.WaitForNotificationWithTimeout(kPromptly));
  EXPECT_TRUE(round->status.ok()) << round->status;
  EXPECT_TRUE(round->on_calling_thread);
  for (auto& epochs : epochs_) EXPECT_EQ(epochs->current_epoch(), 2u);
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(round->calls.load(), 1);
}

TEST_F(EndOfEpochRoundTest, WaitsForAnOperationOnARemoteMachineThatStartedBefore) {
  EpochParticipant remote = MustRegister(*epochs_[2]);
  remote.Enter();
  auto round = StartRound(0, All());
  // The request reached node 3 and waits there; node 2 has answered.
  ASSERT_TRUE(WaitUntil([&] { return epochs_[2]->pending_waiters() == 1; }));
  EXPECT_FALSE(round->finished.WaitForNotificationWithTimeout(kMustNotComplete));
  EXPECT_EQ(epochs_[1]->current_epoch(), 2u);
  EXPECT_EQ(epochs_[1]->pending_waiters(), 0u);
  remote.Exit();
  ASSERT_TRUE(round->finished.WaitForNotificationWithTimeout(kPromptly));
  EXPECT_TRUE(round->status.ok()) << round->status;
}

TEST_F(EndOfEpochRoundTest, WaitsForALocalOperationToo) {
  EpochParticipant local = MustRegister(*epochs_[0]);
  local.Enter();
  auto round = StartRound(0, {1});  // no other member
  EXPECT_FALSE(round->finished.WaitForNotificationWithTimeout(kMustNotComplete));
  local.Exit();
  ASSERT_TRUE(round->finished.WaitForNotificationWithTimeout(kPromptly));
  EXPECT_TRUE(round->status.ok()) << round->status;
  EXPECT_EQ(epochs_[1]->current_epoch(), 1u) << "no request goes to non-members";
}

TEST_F(EndOfEpochRoundTest, FailsNamingMembersThatAreNotConnectedOrDoNotExist) {
  EpochManager lonely_epochs;
  auto lonely = MakeNode(4, lonely_epochs);  // exists, not connected
  ASSERT_NE(lonely, nullptr);
  auto round = StartRound(0, {1, 2, 3, 4, 9});
  ASSERT_TRUE(round->finished.WaitForNotificationWithTimeout(kPromptly));
  EXPECT_TRUE(absl::IsUnavailable(round->status)) << round->status;
  EXPECT_THAT(round->status.message(), HasSubstr("node 4"));
  EXPECT_THAT(round->status.message(), HasSubstr("4, 9"));
  // The reachable members were still asked, and answered before `done` ran.
  EXPECT_EQ(epochs_[1]->current_epoch(), 2u);
  EXPECT_EQ(epochs_[2]->current_epoch(), 2u);
  EXPECT_EQ(lonely_epochs.current_epoch(), 1u);
  lonely.reset();
}

TEST_F(EndOfEpochRoundTest, FailsWithDeadlineExceededWhenAMemberStaysBusy) {
  EpochParticipant remote = MustRegister(*epochs_[1]);
  remote.Enter();
  auto round = StartRound(0, All(), absl::Milliseconds(200));
  ASSERT_TRUE(round->finished.WaitForNotificationWithTimeout(kPromptly));
  EXPECT_TRUE(absl::IsDeadlineExceeded(round->status)) << round->status;
  EXPECT_THAT(round->status.message(), HasSubstr("node 2"));
  remote.Exit();  // node 2 answers late; the round ignores it
  ASSERT_TRUE(WaitUntil([&] { return epochs_[1]->pending_waiters() == 0; }));
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(round->calls.load(), 1);
}

TEST_F(EndOfEpochRoundTest, MalformedRequestsGetInvalidArgument) {
  for (const std::string& payload : {std::string(), std::string("\x02", 1),
                                    std::string(2, static_cast<char>(kAllocWireFormat))}) {
    Notification answered;
    absl::Status status;
    RunInLoop(nodes_[0]->loop(0), [&] {
      const absl::Status sent = nodes_[0]->thread(0).Call(
          2, kEndOfEpochMsgId, payload, [&](const absl::Status& s, absl::string_view) {
            status = s;
            answered.Notify();
          });
      if (!sent.ok()) {
        status = sent;
        answered.Notify();
      }
    });
    ASSERT_TRUE(answered.WaitForNotificationWithTimeout(kPromptly));
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("end-of-epoch request from node 1 is malformed"));
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("got ", payload.size(), " byte")));
  }
  EXPECT_EQ(epochs_[1]->current_epoch(), 1u) << "a malformed request starts no epoch";
}

}  // namespace
}  // namespace farm::alloc
