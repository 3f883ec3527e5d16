#include "tests/support/msg_test_node.h"

#include "absl/time/clock.h"
#include "tests/support/fabric_test_util.h"

namespace farm::testing {

absl::StatusOr<std::unique_ptr<MsgTestNode>> MsgTestNode::Create(const Options& options) {
  auto node = std::make_unique<MsgTestNode>();
  node->id_ = options.id;
  absl::StatusOr<std::unique_ptr<Fabric>> fabric =
      Fabric::Create(TestFabricOptions(options.backend));
  if (!fabric.ok()) return fabric.status();
  node->fabric_ = std::move(*fabric);
  std::vector<EventLoop*> loops;
  for (int i = 0; i < options.threads; ++i) {
    absl::StatusOr<std::unique_ptr<Doorbell>> bell = node->fabric_->CreateDoorbell();
    if (!bell.ok()) return bell.status();
    absl::StatusOr<std::unique_ptr<EventLoop>> loop =
        EventLoop::Create(std::move(*bell), options.loop);
    if (!loop.ok()) return loop.status();
    node->loops_.push_back(std::make_unique<LoopThread>(std::move(*loop)));
    loops.push_back(&node->loops_.back()->loop());
  }
  MessengerOptions mo = options.messenger;
  mo.node_id = options.id;
  absl::StatusOr<std::unique_ptr<Messenger>> messenger =
      Messenger::Create(node->fabric_.get(), loops, mo);
  if (!messenger.ok()) return messenger.status();
  node->messenger_ = std::move(*messenger);
  if (options.handlers) options.handlers(*node->messenger_);
  if (absl::Status s = node->messenger_->Start(); !s.ok()) return s;
  return node;
}

MsgTestNode::~MsgTestNode() {
  messenger_.reset();  // while the loops run
  loops_.clear();
  fabric_.reset();
}

absl::Status MsgTestNode::ConnectTo(MsgTestNode& other) {
  if (absl::Status s = messenger_->Connect(other.id(), other.locator()); !s.ok()) return s;
  // The other side connects back on its own; links are installed through the loops.
  const bool linked = WaitUntil([&] {
    if (!other.messenger().IsConnected(id_)) return false;
    bool all = true;
    for (size_t i = 0; i < messenger_->thread_count(); ++i) {
      RunInLoop(loop(i), [&] { all = all && thread(i).IsLinked(other.id()); });
    }
    for (size_t i = 0; i < other.messenger().thread_count(); ++i) {
      RunInLoop(other.loop(i), [&] { all = all && other.thread(i).IsLinked(id_); });
    }
    return all;
  });
  return linked ? absl::OkStatus() : absl::DeadlineExceededError("nodes did not link both ways");
}

bool WaitUntil(const std::function<bool()>& pred, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!pred()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

}  // namespace farm::testing
