// Messaging between node processes: a peer killed with SIGKILL fails the calls waiting
// on it, and a restarted one is linked again.
#include <signal.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "farm/base/mutex.h"
#include "farm/msg/messenger.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/child_process.h"
#include "tests/support/msg_test_node.h"

namespace farm {
namespace {

using testing::ChildProcess;
using testing::MsgTestNode;
using testing::WaitUntil;

constexpr MsgId kEcho = 1;
constexpr MsgId kHang = 2;

void RegisterHandlers(Messenger& m) {
  (void)m.RegisterHandler(kEcho, [](MsgThread& t, const Message& msg) {
    (void)t.Reply(msg.reply_to, msg.payload);
  });
  (void)m.RegisterHandler(kHang, [](MsgThread&, const Message&) {});  // never answers
}

std::unique_ptr<MsgTestNode> StartNode(const std::string& backend, NodeId id) {
  MsgTestNode::Options o;
  o.backend = backend;
  o.id = id;
  o.threads = 2;
  o.handlers = RegisterHandlers;
  absl::StatusOr<std::unique_ptr<MsgTestNode>> node = MsgTestNode::Create(o);
  if (!node.ok()) {
    std::fprintf(stderr, "node %u: %s\n", id, node.status().ToString().c_str());
    std::exit(3);
  }
  return std::move(*node);
}

// A node process that joins the node at args[2] (node 1) and serves until stopped.
FARM_CHILD_ROLE(node) {
  uint32_t id = 0;
  if (!absl::SimpleAtoi(args.at(1), &id)) return 2;
  std::unique_ptr<MsgTestNode> node = StartNode(args.at(0), id);
  if (absl::Status s = node->messenger().Connect(1, args.at(2)); !s.ok()) {
    std::printf("ERROR %s\n", s.ToString().c_str());
    return 4;
  }
  std::printf("READY %s\n", node->locator().c_str());
  char line[64];
  while (std::fgets(line, sizeof(line), stdin) != nullptr && std::strncmp(line, "STOP", 4) != 0) {
  }
  return 0;
}

class MessengerProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  struct Result {
    absl::Status status;
    std::string payload;
  };
  // Starts a call on `node`'s thread `t`; `done` is notified with its outcome.
  void StartCall(MsgTestNode& node, size_t t, NodeId to, MsgId id, const std::string& payload,
                 Result* out, Notification* done) {
    RunInLoop(node.loop(t), [&node, t, to, id, payload, out, done] {
      absl::Status s = node.thread(t).Call(
          to, id, payload,
          [out, done](const absl::Status& status, absl::string_view p) {
            out->status = status;
            out->payload = std::string(p);
            done->Notify();
          },
          absl::InfiniteDuration());
      if (!s.ok()) {
        out->status = s;
        done->Notify();
      }
    });
  }
  Result Call(MsgTestNode& node, size_t t, NodeId to, MsgId id, const std::string& payload) {
    Result r;
    Notification done;
    StartCall(node, t, to, id, payload, &r, &done);
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
    return r;
  }
  absl::StatusOr<ChildProcess> SpawnPeer(MsgTestNode& parent) {
    absl::StatusOr<ChildProcess> child =
        testing::SpawnChild("node", {GetParam(), "2", parent.locator()});
    if (!child.ok()) return child;
    absl::StatusOr<std::string> ready = child->ReadLineStartingWith("READY", absl::Seconds(20));
    if (!ready.ok()) return ready.status();
    if (!WaitUntil([&] { return parent.messenger().IsConnected(2); })) {
      return absl::DeadlineExceededError("parent never linked to the child");
    }
    return child;
  }
};

TEST_P(MessengerProcessTest, KilledPeerFailsWaitingCallsAndRestartedPeerIsLinkedAgain) {
  std::unique_ptr<MsgTestNode> parent = StartNode(GetParam(), 1);
  absl::StatusOr<ChildProcess> child = SpawnPeer(*parent);
  ASSERT_TRUE(child.ok()) << child.status();
  for (size_t t = 0; t < 2; ++t) {
    Result echo = Call(*parent, t, 2, kEcho, absl::StrCat("ping ", t));
    ASSERT_TRUE(echo.status.ok()) << echo.status;
    EXPECT_EQ(echo.payload, absl::StrCat("ping ", t));
  }

  // Calls that will never be answered, on both threads, with no deadline.
  Result hung[2];
  Notification hung_done[2];
  for (size_t t = 0; t < 2; ++t) StartCall(*parent, t, 2, kHang, "", &hung[t], &hung_done[t]);
  child->Kill(SIGKILL);
  ASSERT_EQ(child->Wait(absl::Seconds(10)).value_or(-1), 128 + SIGKILL);
  for (size_t t = 0; t < 2; ++t) {
    ASSERT_TRUE(hung_done[t].WaitForNotificationWithTimeout(absl::Seconds(10)))
        << "a call to a dead peer hung";
    EXPECT_EQ(hung[t].status.code(), absl::StatusCode::kUnavailable) << hung[t].status;
  }
  ASSERT_TRUE(WaitUntil([&] { return !parent->messenger().IsConnected(2); }));
  EXPECT_EQ(Call(*parent, 0, 2, kEcho, "anyone?").status.code(), absl::StatusCode::kUnavailable);

  absl::StatusOr<ChildProcess> restarted = SpawnPeer(*parent);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  Result again = Call(*parent, 1, 2, kEcho, "welcome back");
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_EQ(again.payload, "welcome back");
  ASSERT_TRUE(restarted->WriteLine("STOP").ok());
  EXPECT_EQ(restarted->Wait(absl::Seconds(20)).value_or(-1), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, MessengerProcessTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
