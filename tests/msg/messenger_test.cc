// The messaging layer across in-process clusters, for each backend.
#include "farm/msg/messenger.h"

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "farm/base/mutex.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/msg_test_node.h"

namespace farm {
namespace {

using testing::MsgTestNode;
using testing::WaitUntil;

constexpr MsgId kEcho = 1;
constexpr MsgId kRecord = 2;
constexpr MsgId kFail = 3;
constexpr MsgId kSilent = 4;
constexpr MsgId kSlow = 5;
constexpr MsgId kLater = 6;

// What handlers saw, shared by all nodes of a test (handlers run on loop threads).
struct Journal {
  Mutex mu;
  // (receiving node, from node, from thread) -> sequence numbers in arrival order
  std::map<std::tuple<NodeId, NodeId, uint16_t>, std::vector<uint64_t>> seen ABSL_GUARDED_BY(mu);
  std::atomic<uint64_t> count{0};
};

std::string Num(uint64_t v) { return absl::StrCat(v); }
uint64_t ParseNum(absl::string_view p) {
  uint64_t v = 0;
  EXPECT_TRUE(absl::SimpleAtoi(p, &v)) << p;
  return v;
}

// For one-sided ops from A to B: B's region 7 (`target`, to read) and A's private
// region (`buffer`, to read into), `bytes` each, registered with their node's fabric.
// The tests deregister them.
struct OneSidedRegions {
  Region target;
  Region buffer;
  RegisteredRegion cap;    // target's, on B
  RegisteredRegion local;  // buffer's, on A
};
absl::StatusOr<OneSidedRegions> RegisterOneSidedRegions(MsgTestNode& a, MsgTestNode& b, uint64_t bytes) {
  absl::StatusOr<Region> target = Region::Create(7, bytes);
  if (!target.ok()) return target.status();
  absl::StatusOr<Region> buffer = Region::Create(kFirstPrivateRegion + 100, bytes);
  if (!buffer.ok()) return buffer.status();
  absl::StatusOr<RegisteredRegion> cap = b.fabric().RegisterRegion(*target);
  if (!cap.ok()) return cap.status();
  absl::StatusOr<RegisteredRegion> local = a.fabric().RegisterRegion(*buffer);
  if (!local.ok()) return local.status();
  return OneSidedRegions{std::move(*target), std::move(*buffer), *cap, *local};
}

class MessengerTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<MsgTestNode> Node(NodeId id, int threads = 1, MessengerOptions mo = {}) {
    MsgTestNode::Options o;
    o.backend = GetParam();
    o.id = id;
    o.threads = threads;
    o.messenger = mo;
    o.handlers = [this, id](Messenger& m) {
      ASSERT_TRUE(m.RegisterHandler(kEcho, [](MsgThread& t, const Message& msg) {
                     const absl::Status replied = t.Reply(msg.reply_to, msg.payload);
                     ASSERT_TRUE(replied.ok()) << replied;
                   }).ok());
      ASSERT_TRUE(m.RegisterHandler(kRecord, [this, id](MsgThread& t, const Message& msg) {
                     {
                       MutexLock lock(&journal_.mu);
                       journal_.seen[{id, msg.from, msg.from_thread}].push_back(ParseNum(msg.payload));
                     }
                     journal_.count++;
                   }).ok());
      ASSERT_TRUE(m.RegisterHandler(kFail, [](MsgThread& t, const Message& msg) {
                     ASSERT_TRUE(t.ReplyError(msg.reply_to, absl::NotFoundError("no such key")).ok());
                   }).ok());
      ASSERT_TRUE(m.RegisterHandler(kSilent, [](MsgThread&, const Message&) {}).ok());
      ASSERT_TRUE(m.RegisterHandler(kSlow, [this](MsgThread&, const Message& msg) {
                     absl::SleepFor(absl::Milliseconds(1));  // a receiver that lags
                     journal_.count++;
                     MutexLock lock(&journal_.mu);
                     journal_.seen[{0, msg.from, 0}].push_back(ParseNum(msg.payload));
                   }).ok());
      ASSERT_TRUE(m.RegisterHandler(kLater, [](MsgThread& t, const Message& msg) {
                     // Replies after the handler returned: the request is kept by value.
                     std::string copy(msg.payload.data(), msg.payload.size());
                     t.loop().RunAfter(absl::Milliseconds(5), [&t, to = msg.reply_to, copy] {
                       ASSERT_TRUE(t.Reply(to, absl::StrCat("later:", copy)).ok());
                     });
                   }).ok());
    };
    auto node = MsgTestNode::Create(o);
    EXPECT_TRUE(node.ok()) << node.status();
    return std::move(*node);
  }

  // Makes a call from `from`'s thread `t` and waits for its outcome.
  struct Outcome {
    absl::Status status;
    std::string payload;
    bool on_calling_thread = false;
  };
  Outcome CallAndWait(MsgTestNode& from, size_t t, NodeId to, MsgId id, const std::string& payload,
                      absl::Duration timeout = absl::ZeroDuration()) {
    Outcome out;
    Notification done;
    RunInLoop(from.loop(t), [&] {
      absl::Status s = from.thread(t).Call(
          to, id, payload,
          [&](const absl::Status& status, absl::string_view p) {
            out.status = status;
            out.payload = std::string(p);
            out.on_calling_thread = from.loop(t).InLoopThread();
            done.Notify();
          },
          timeout);
      if (!s.ok()) {
        out.status = s;
        done.Notify();
      }
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    return out;
  }

  Journal journal_;
};

TEST_P(MessengerTest, CallRunsItsContinuationOnTheCallingThread) {
  auto a = Node(1, 2), b = Node(2, 2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  for (size_t t = 0; t < 2; ++t) {
    Outcome o = CallAndWait(*a, t, 2, kEcho, "hello");
    ASSERT_TRUE(o.status.ok()) << o.status;
    EXPECT_EQ(o.payload, "hello");
    EXPECT_TRUE(o.on_calling_thread);
  }
  Outcome back = CallAndWait(*b, 1, 1, kEcho, "and back");
  EXPECT_TRUE(back.status.ok()) << back.status;
  EXPECT_EQ(back.payload, "and back");
}

// Regression: Connect used to return before the peer had connected back, and replies
// sent before that were dropped (the call then timed out).
TEST_P(MessengerTest, CallRightAfterConnectGetsItsReply) {
  for (int round = 0; round < 10; ++round) {
    auto a = Node(1, 2), b = Node(2, 3);
    ASSERT_TRUE(a->messenger().Connect(2, b->locator()).ok());
    EXPECT_TRUE(a->messenger().IsConnected(2));
    for (size_t t = 0; t < 2; ++t) {
      Outcome o = CallAndWait(*a, t, 2, kEcho, "now", absl::Seconds(5));
      ASSERT_TRUE(o.status.ok()) << "round " << round << ": " << o.status;
    }
  }
}

// Bursts of call chains separated by pauses long enough for both loops to park, with
// spinning loops that yield: every call must complete (no lost wake-up).
TEST_P(MessengerTest, ParkedLoopsWakeForEveryMessage) {
  MsgTestNode::Options o;
  auto make = [&](NodeId id) {
    MsgTestNode::Options opt;
    opt.backend = GetParam();
    opt.id = id;
    opt.loop.spin = absl::Milliseconds(2);
    opt.handlers = [](Messenger& m) {
      ASSERT_TRUE(m.RegisterHandler(kEcho, [](MsgThread& t, const Message& msg) {
                     const absl::Status replied = t.Reply(msg.reply_to, msg.payload);
                     ASSERT_TRUE(replied.ok()) << replied;
                   }).ok());
    };
    return std::move(*MsgTestNode::Create(opt));
  };
  auto a = make(1), b = make(2);
  ASSERT_TRUE(a->messenger().Connect(2, b->locator()).ok());
  for (int burst = 0; burst < 30; ++burst) {
    struct Chain {
      MsgThread* thread;
      int left;
      absl::Status error;
      Notification done;
      void Next() {
        if (left-- == 0) {
          done.Notify();
          return;
        }
        absl::Status s = thread->Call(
            2, kEcho, "ping",
            [this](const absl::Status& st, absl::string_view) {
              if (!st.ok()) {
                error = st;
                done.Notify();
                return;
              }
              Next();
            },
            absl::Seconds(3));
        if (!s.ok()) {
          error = s;
          done.Notify();
        }
      }
    };
    Chain chain{&a->thread(0), 200};
    a->loop(0).Post([&chain] { chain.Next(); });
    ASSERT_TRUE(chain.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
    ASSERT_TRUE(chain.error.ok()) << "burst " << burst << ": " << chain.error;
    absl::SleepFor(absl::Milliseconds(5 + burst % 5));  // both loops park
  }
}

TEST_P(MessengerTest, UnequalThreadCountsStillAnswerTheCallingThread) {
  auto a = Node(1, 3), b = Node(2, 1);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  for (size_t t = 0; t < 3; ++t) {
    Outcome o = CallAndWait(*a, t, 2, kEcho, Num(t));
    ASSERT_TRUE(o.status.ok()) << o.status;
    EXPECT_EQ(o.payload, Num(t));
    EXPECT_TRUE(o.on_calling_thread) << "thread " << t;
  }
}

TEST_P(MessengerTest, MessagesOnAChannelArriveInOrder) {
  auto a = Node(1, 2), b = Node(2, 2), c = Node(3, 1);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  ASSERT_TRUE(a->ConnectTo(*c).ok());
  ASSERT_TRUE(b->ConnectTo(*c).ok());
  constexpr uint64_t kPerSender = 20000;
  // Each sender sends what the rings take, and when they push back re-posts itself to
  // continue after the loop has polled (the event-driven way to wait for space).
  struct Sender {
    MsgTestNode* node;
    size_t thread;
    uint64_t next = 0;
    size_t peer = 0;
    Notification done;
    void Step() {
      const std::vector<NodeId> peers = node->id() == 1 ? std::vector<NodeId>{2, 3}
                                                        : std::vector<NodeId>{1, 3};
      while (next < kPerSender) {
        absl::Status s = node->thread(thread).Send(peers[peer], kRecord, Num(next));
        if (absl::IsResourceExhausted(s)) {
          node->loop(thread).Post([this] { Step(); });
          return;
        }
        ASSERT_TRUE(s.ok()) << s;
        if (++peer == peers.size()) {
          peer = 0;
          ++next;
        }
      }
      done.Notify();
    }
  };
  std::vector<std::unique_ptr<Sender>> senders;
  for (auto [node, t] : std::vector<std::pair<MsgTestNode*, size_t>>{
           {a.get(), 0}, {a.get(), 1}, {b.get(), 1}}) {
    senders.push_back(std::make_unique<Sender>());
    senders.back()->node = node;
    senders.back()->thread = t;
    Sender* s = senders.back().get();
    node->loop(t).Post([s] { s->Step(); });
  }
  for (auto& s : senders) ASSERT_TRUE(s->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  ASSERT_TRUE(WaitUntil([&] { return journal_.count == 6 * kPerSender; }, absl::Seconds(60)))
      << journal_.count;
  MutexLock lock(&journal_.mu);
  EXPECT_EQ(journal_.seen.size(), 6u);
  for (const auto& [key, seqs] : journal_.seen) {
    ASSERT_EQ(seqs.size(), kPerSender);
    for (uint64_t i = 0; i < kPerSender; ++i) ASSERT_EQ(seqs[i], i) << "reordered on a channel";
  }
}

TEST_P(MessengerTest, ErrorsFromTheHandlerAndMissingHandlersReachTheCaller) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  Outcome failed = CallAndWait(*a, 0, 2, kFail, "k");
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(failed.status.message(), "no such key");
  Outcome missing = CallAndWait(*a, 0, 2, 999, "?");
  EXPECT_EQ(missing.status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(missing.status.message().find("999"), std::string::npos) << missing.status;
}

TEST_P(MessengerTest, UnansweredCallTimesOut) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  Outcome o = CallAndWait(*a, 0, 2, kSilent, "", absl::Milliseconds(50));
  EXPECT_EQ(o.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(o.on_calling_thread);
  size_t pending = 1;
  RunInLoop(a->loop(0), [&] { pending = a->thread(0).pending_calls(); });
  EXPECT_EQ(pending, 0u);
}

TEST_P(MessengerTest, ReplyMayComeAfterTheHandlerReturned) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  Outcome o = CallAndWait(*a, 0, 2, kLater, "x");
  ASSERT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.payload, "later:x");
}

TEST_P(MessengerTest, OversizeMessageIsRefusedWithAClearError) {
  MessengerOptions mo;
  mo.ring_bytes = 64 * 1024;
  auto a = Node(1, 1, mo), b = Node(2, 1, mo);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  size_t max = 0;
  RunInLoop(a->loop(0), [&] { max = a->thread(0).max_payload_bytes(); });
  EXPECT_EQ(max, 16 * 1024 - 32u);
  Outcome too_big = CallAndWait(*a, 0, 2, kEcho, std::string(max + 1, 'x'));
  EXPECT_EQ(too_big.status.code(), absl::StatusCode::kInvalidArgument);
  Outcome largest = CallAndWait(*a, 0, 2, kEcho, std::string(max, 'x'));
  ASSERT_TRUE(largest.status.ok()) << largest.status;
  EXPECT_EQ(largest.payload.size(), max);
}

TEST_P(MessengerTest, SlowReceiverMakesSendersWaitWithoutLoss) {
  MessengerOptions mo;
  mo.ring_bytes = 16 * 1024;
  auto a = Node(1, 1, mo), b = Node(2, 1, mo);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  constexpr uint64_t kMessages = 1500;  // ~1.5 s of the receiver's time
  const std::string padding(200, 'p');
  RunInLoop(a->loop(0), [&] {
    for (uint64_t i = 0; i < kMessages; ++i) ASSERT_TRUE(a->thread(0).Send(2, kSlow, Num(i)).ok());
  });
  ASSERT_TRUE(WaitUntil([&] { return journal_.count == kMessages; }, absl::Seconds(60)));
  MutexLock lock(&journal_.mu);
  const std::vector<uint64_t>& seqs = journal_.seen[{0, 1, 0}];
  ASSERT_EQ(seqs.size(), kMessages);
  for (uint64_t i = 0; i < kMessages; ++i) ASSERT_EQ(seqs[i], i);
}

TEST_P(MessengerTest, FullBacklogIsAnErrorNotUnboundedMemory) {
  MessengerOptions mo;
  mo.ring_bytes = 16 * 1024;
  mo.max_backlog_bytes = 32 * 1024;
  auto a = Node(1, 1, mo), b = Node(2, 1, mo);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  absl::Status last;
  uint64_t accepted = 0;
  const std::string big(3000, 'b');
  // The receiver's thread is held busy, so nothing drains the ring (on shm it would
  // otherwise free space concurrently) and the backlog must fill.
  Notification receiver_busy, release_receiver;
  b->loop(0).Post([&] {
    receiver_busy.Notify();
    release_receiver.WaitForNotification();
  });
  receiver_busy.WaitForNotification();
  RunInLoop(a->loop(0), [&] {
    for (int i = 0; i < 1000 && last.ok(); ++i) {
      last = a->thread(0).Send(2, kSilent, big);
      if (last.ok()) ++accepted;
    }
  });
  release_receiver.Notify();
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_LT(accepted, 30u);
  // Once the loop runs again everything accepted is delivered and sending works.
  Outcome o = CallAndWait(*a, 0, 2, kEcho, "still fine");
  EXPECT_TRUE(o.status.ok()) << o.status;
}

// Calls whose request is built in place (PayloadBuilder): to a peer, to this node (the
// hand-over keeps a copy), and through a full ring's backlog, each written once and
// answered whole.
TEST_P(MessengerTest, RequestsBuiltInPlaceArriveWhole) {
  MessengerOptions mo;
  mo.ring_bytes = 16 * 1024;
  auto a = Node(1, 1, mo), b = Node(2, 1, mo);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  // The receiver's thread is held busy at first, so that the ring fills and later
  // requests wait in the backlog.
  Notification receiver_busy, release_receiver;
  b->loop(0).Post([&] {
    receiver_busy.Notify();
    release_receiver.WaitForNotification();
  });
  receiver_busy.WaitForNotification();
  constexpr int kCalls = 24;  // 24 x 3000 bytes: more than the 16 KiB ring holds
  std::vector<std::string> requests, replies(kCalls);
  for (int i = 0; i < kCalls; ++i) requests.push_back(std::string(3000, static_cast<char>('a' + i)));
  std::atomic<int> answered{0};
  int writes = 0;
  RunInLoop(a->loop(0), [&] {
    for (int i = 0; i < kCalls; ++i) {
      const NodeId to = i % 4 == 3 ? 1 : 2;  // every fourth to this node
      const std::string& r = requests[i];
      absl::Status s = a->thread(0).Call(to, kEcho, PayloadBuilder{r.size(), [&](char* dst) {
                                                       ++writes;
                                                       std::memcpy(dst, r.data(), r.size());
                                                     }},
                                         [&, i](const absl::Status& status, absl::string_view p) {
                                           EXPECT_TRUE(status.ok()) << status;
                                           replies[i] = std::string(p);
                                           ++answered;
                                         });
      ASSERT_TRUE(s.ok()) << s;
    }
  });
  release_receiver.Notify();
  ASSERT_TRUE(WaitUntil([&] { return answered == kCalls; }, absl::Seconds(30)));
  EXPECT_EQ(writes, kCalls);
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(replies[i], requests[i]) << i;
  // Over the limit: refused, the builder not called.
  size_t max = 0;
  absl::Status too_big;
  RunInLoop(a->loop(0), [&] {
    max = a->thread(0).max_payload_bytes();
    too_big = a->thread(0).Call(2, kEcho, PayloadBuilder{max + 1, [&](char*) { ++writes; }},
                                [](const absl::Status&, absl::string_view) {});
  });
  EXPECT_EQ(too_big.code(), absl::StatusCode::kInvalidArgument) << too_big;
  EXPECT_EQ(writes, kCalls);
}

TEST_P(MessengerTest, SendingToAnUnknownNodeIsUnavailable) {
  auto a = Node(1);
  absl::Status s;
  RunInLoop(a->loop(0), [&] { s = a->thread(0).Send(42, kRecord, "x"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  Outcome o = CallAndWait(*a, 0, 42, kEcho, "x");
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable);
}

TEST_P(MessengerTest, MessagesToThisNodeAndToAnotherThread) {
  auto a = Node(1, 2);
  Outcome self = CallAndWait(*a, 0, 1, kEcho, "me");
  ASSERT_TRUE(self.status.ok()) << self.status;
  EXPECT_EQ(self.payload, "me");
  auto b = Node(2, 2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  // Thread 0's ring to b is polled by b's thread 0; address thread 1 explicitly.
  RunInLoop(a->loop(0), [&] { ASSERT_TRUE(a->thread(0).Send(2, kRecord, "7", 1).ok()); });
  ASSERT_TRUE(WaitUntil([&] { return journal_.count == 1; }));
  MsgThreadStats s0, s1;
  RunInLoop(b->loop(0), [&] { s0 = b->thread(0).stats(); });
  EXPECT_EQ(s0.forwarded, 1u);
  RunInLoop(b->loop(1), [&] { s1 = b->thread(1).stats(); });
  EXPECT_EQ(s1.received, 1u);
}

TEST_P(MessengerTest, OneSidedConnectionsGetNoRingAndGarbageHellosAreRefused) {
  auto a = Node(1);
  auto fabric = Fabric::Create(testing::TestFabricOptions(GetParam()));
  ASSERT_TRUE(fabric.ok());
  auto cq = (*fabric)->CreateCompletionQueue();
  ASSERT_TRUE(cq.ok());
  absl::StatusOr<Connection> plain = (*fabric)->Connect(a->locator(), OneSidedHello(9), cq->get(), 0);
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(a->messenger().IsConnected(9)) << "a one-sided client must not be connected back";
  absl::StatusOr<Connection> garbage = (*fabric)->Connect(a->locator(), "\x01junk", cq->get(), 0);
  EXPECT_FALSE(garbage.ok());
  absl::StatusOr<Connection> empty = (*fabric)->Connect(a->locator(), "", cq->get(), 0);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kFailedPrecondition) << empty.status();
}

TEST_P(MessengerTest, ConnectChecksWhoIsThere) {
  auto a = Node(1), b = Node(2);
  absl::Status wrong = a->messenger().Connect(7, b->locator());
  EXPECT_EQ(wrong.code(), absl::StatusCode::kFailedPrecondition) << wrong;
  EXPECT_NE(wrong.message().find("node 2"), std::string::npos) << wrong;
  auto twin = Node(2);
  absl::Status duplicate = twin->messenger().Connect(5, b->locator());
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists) << duplicate;
  MessengerOptions other_ring;
  other_ring.ring_bytes = 64 * 1024;
  auto c = Node(3, 1, other_ring);
  absl::Status mismatch = c->messenger().Connect(2, b->locator());
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kFailedPrecondition) << mismatch;
  EXPECT_EQ(a->messenger().Connect(1, a->locator()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(MessengerTest, DestroyedPeerFailsPendingCallsAndLaterSends) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  Outcome o;
  Notification done;
  RunInLoop(a->loop(0), [&] {
    ASSERT_TRUE(a->thread(0)
                    .Call(2, kSilent, "", [&](const absl::Status& s, absl::string_view) {
                      o.status = s;
                      done.Notify();
                    }, absl::InfiniteDuration())
                    .ok());
  });
  b.reset();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  ASSERT_TRUE(WaitUntil([&] { return !a->messenger().IsConnected(2); }));
  absl::Status s;
  RunInLoop(a->loop(0), [&] { s = a->thread(0).Send(2, kRecord, "x"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
}

// One-sided ops of the layers above travel over the thread's link and complete on the
// posting thread; remote errors reach the caller without failing the link, and a lost
// link completes what was outstanding.
TEST_P(MessengerTest, OneSidedOpsCompleteOnThePostingThread) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  // B's memory to read, A's buffer to read into.
  absl::StatusOr<OneSidedRegions> regions = RegisterOneSidedRegions(*a, *b, 1 << 20);
  ASSERT_TRUE(regions.ok()) << regions.status();
  std::memcpy(regions->target.base() + 4096, "one-sided", 9);

  auto post = [&](uint64_t remote_offset, uint32_t length) {
    Completion result;
    bool on_thread = false;
    Notification done;
    RunInLoop(a->loop(0), [&] {
      WorkRequest wr;
      wr.opcode = Opcode::kRead;
      wr.local = regions->local.local.base;
      wr.lkey = regions->local.local.lkey;
      wr.length = length;
      wr.remote = &regions->cap.capability;
      wr.remote_offset = remote_offset;
      absl::Status s = a->thread(0).PostOneSided(2, wr, [&](const Completion& c) {
        result = c;
        on_thread = a->loop(0).InLoopThread();
        done.Notify();
      });
      ASSERT_TRUE(s.ok()) << s;
    });
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_TRUE(on_thread);
    return result;
  };
  Completion ok = post(4096, 9);
  EXPECT_EQ(ok.status, CompletionStatus::kSuccess);
  EXPECT_EQ(std::string(regions->buffer.base(), 9), "one-sided");
  // Out of bounds: an error completion, and the link keeps working.
  Completion bad = post((1 << 20) - 4, 64);
  EXPECT_EQ(bad.status, CompletionStatus::kRemoteAccessError);
  EXPECT_TRUE(CallAndWait(*a, 0, 2, kEcho, "still linked").status.ok());
  absl::Status unlinked;
  RunInLoop(a->loop(0), [&] {
    WorkRequest wr;
    unlinked = a->thread(0).PostOneSided(9, wr, [](const Completion&) {});
  });
  EXPECT_EQ(unlinked.code(), absl::StatusCode::kUnavailable);
  (void)b->fabric().DeregisterRegion(7);
  b.reset();
  (void)a->fabric().DeregisterRegion(kFirstPrivateRegion + 100);
}

TEST_P(MessengerTest, OneSidedOpsOutstandingWhenThePeerDiesCompleteExactlyOnce) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  constexpr uint32_t kBytes = 1 << 20;
  constexpr int kOps = 64;
  absl::StatusOr<OneSidedRegions> regions = RegisterOneSidedRegions(*a, *b, 4 * kBytes);
  ASSERT_TRUE(regions.ok()) << regions.status();
  std::atomic<int> completions{0}, failures{0};
  RunInLoop(a->loop(0), [&] {
    for (int i = 0; i < kOps; ++i) {
      WorkRequest wr;
      wr.opcode = Opcode::kRead;
      wr.local = regions->local.local.base + (i % 4) * kBytes;
      wr.lkey = regions->local.local.lkey;
      wr.length = kBytes;
      wr.remote = &regions->cap.capability;
      wr.remote_offset = (i % 4) * kBytes;
      absl::Status s = a->thread(0).PostOneSided(2, wr, [&](const Completion& c) {
        if (c.status != CompletionStatus::kSuccess) failures++;
        completions++;
      });
      if (!s.ok()) break;  // the send queue is full: the rest are not posted
    }
  });
  const int posted = [&] {
    int n = 0;
    RunInLoop(a->loop(0), [&] { n = static_cast<int>(a->thread(0).pending_one_sided()) + completions.load(); });
    return n;
  }();
  ASSERT_GT(posted, 0);
  (void)b->fabric().DeregisterRegion(7);
  b.reset();  // with READs possibly still outstanding
  ASSERT_TRUE(WaitUntil([&] { return completions.load() >= posted; }));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(completions.load(), posted) << "every op completes exactly once";
  size_t pending = 1;
  RunInLoop(a->loop(0), [&] { pending = a->thread(0).pending_one_sided(); });
  EXPECT_EQ(pending, 0u);
  std::printf("%s: %d one-sided READs, %d failed with their peer\n", GetParam().c_str(), posted,
              failures.load());
  (void)a->fabric().DeregisterRegion(kFirstPrivateRegion + 100);
}

// More one-sided ops than the endpoint's send queue (and the completion queue) holds,
// posted in one turn of the loop: the ones without room wait in the link's backlog and
// every op completes once, successfully, in the order posted, with the right bytes.
TEST_P(MessengerTest, OneSidedOpsBeyondTheSendQueueWaitTheirTurn) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  constexpr int kOps = 5000;  // > max_outstanding (256) and > cq_depth (4096)
  absl::StatusOr<OneSidedRegions> regions = RegisterOneSidedRegions(*a, *b, 1 << 20);
  ASSERT_TRUE(regions.ok()) << regions.status();
  for (uint64_t i = 0; i < kOps; ++i) {
    const uint64_t word = i * 0x9E3779B97F4A7C15ull;
    std::memcpy(regions->target.base() + i * 8, &word, 8);
  }
  std::vector<int> order;
  int failures = 0;
  Notification all_done;
  absl::Status posted;
  RunInLoop(a->loop(0), [&] {
    for (int i = 0; i < kOps && posted.ok(); ++i) {
      WorkRequest wr;
      wr.opcode = Opcode::kRead;
      wr.local = regions->local.local.base + i * 8;
      wr.lkey = regions->local.local.lkey;
      wr.length = 8;
      RegionCapability copy = regions->cap.capability;  // the op keeps no pointer past the post
      wr.remote = &copy;
      wr.remote_offset = i * 8;
      posted = a->thread(0).PostOneSided(2, wr, [&, i](const Completion& c) {
        if (c.status != CompletionStatus::kSuccess) ++failures;
        order.push_back(i);
        if (order.size() == kOps) all_done.Notify();
      });
    }
  });
  ASSERT_TRUE(posted.ok()) << posted;
  ASSERT_TRUE(all_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  uint64_t backlogged = 0;
  size_t pending = 1;
  RunInLoop(a->loop(0), [&] {
    backlogged = a->thread(0).one_sided_backlogged();
    pending = a->thread(0).pending_one_sided();
  });
  EXPECT_GT(backlogged, 0u) << "the test must overrun the endpoint to mean anything";
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(failures, 0);
  for (int i = 0; i < kOps; ++i) {
    ASSERT_EQ(order[i], i) << "completions in the order posted";
    uint64_t word;
    std::memcpy(&word, regions->buffer.base() + i * 8, 8);
    ASSERT_EQ(word, i * 0x9E3779B97F4A7C15ull) << i;
  }
  EXPECT_TRUE(CallAndWait(*a, 0, 2, kEcho, "still linked").status.ok());
  (void)b->fabric().DeregisterRegion(7);
  b.reset();
  (void)a->fabric().DeregisterRegion(kFirstPrivateRegion + 100);
}

// The peer dies while ops wait in the backlog: each completes exactly once, and none is
// left pending.
TEST_P(MessengerTest, BackloggedOneSidedOpsCompleteOnceWhenThePeerDies) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  constexpr int kOps = 5000;
  absl::StatusOr<OneSidedRegions> regions = RegisterOneSidedRegions(*a, *b, 1 << 20);
  ASSERT_TRUE(regions.ok()) << regions.status();
  std::atomic<int> completions{0};
  uint64_t backlogged = 0;
  RunInLoop(a->loop(0), [&] {
    for (int i = 0; i < kOps; ++i) {
      WorkRequest wr;
      wr.opcode = Opcode::kRead;
      wr.local = regions->local.local.base + (i % 64) * 4096;
      wr.lkey = regions->local.local.lkey;
      wr.length = 4096;
      wr.remote = &regions->cap.capability;
      wr.remote_offset = (i % 64) * 4096;
      ASSERT_TRUE(a->thread(0).PostOneSided(2, wr, [&](const Completion&) { completions++; }).ok());
    }
    backlogged = a->thread(0).one_sided_backlogged();
  });
  EXPECT_GT(backlogged, 0u);
  (void)b->fabric().DeregisterRegion(7);
  b.reset();
  ASSERT_TRUE(WaitUntil([&] { return completions.load() >= kOps; }));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(completions.load(), kOps) << "every op completes exactly once";
  size_t pending = 1;
  RunInLoop(a->loop(0), [&] { pending = a->thread(0).pending_one_sided(); });
  EXPECT_EQ(pending, 0u);
  (void)a->fabric().DeregisterRegion(kFirstPrivateRegion + 100);
}

TEST_P(MessengerTest, RestartedPeerIsLinkedAgain) {
  auto a = Node(1), b = Node(2);
  ASSERT_TRUE(a->ConnectTo(*b).ok());
  b.reset();
  ASSERT_TRUE(WaitUntil([&] { return !a->messenger().IsConnected(2); }));
  b = Node(2);
  // The new instance connects; a connects back on its own.
  ASSERT_TRUE(b->messenger().Connect(1, a->locator()).ok());
  ASSERT_TRUE(WaitUntil([&] { return a->messenger().IsConnected(2); }));
  Outcome o;
  ASSERT_TRUE(WaitUntil([&] {
    o = CallAndWait(*a, 0, 2, kEcho, "again");
    return o.status.ok();
  })) << o.status;
  EXPECT_EQ(o.payload, "again");
}

INSTANTIATE_TEST_SUITE_P(Backends, MessengerTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
