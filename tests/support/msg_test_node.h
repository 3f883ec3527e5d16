// A messaging node for tests: a fabric, worker threads running event loops, and a
// started Messenger. Several in one process make a cluster.
#ifndef FARM_TESTS_SUPPORT_MSG_TEST_NODE_H_
#define FARM_TESTS_SUPPORT_MSG_TEST_NODE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"

namespace farm::testing {

class MsgTestNode {
 public:
  struct Options {
    std::string backend = "tcp";
    NodeId id = 1;
    int threads = 1;
    MessengerOptions messenger;  // node_id is taken from `id`
    EventLoopOptions loop;
    // Registers handlers before the messenger starts.
    std::function<void(Messenger&)> handlers;
  };
  static absl::StatusOr<std::unique_ptr<MsgTestNode>> Create(const Options& options);
  ~MsgTestNode();

  Messenger& messenger() { return *messenger_; }
  Fabric& fabric() { return *fabric_; }
  EventLoop& loop(size_t i) { return loops_[i]->loop(); }
  MsgThread& thread(size_t i) { return messenger_->thread(i); }
  NodeId id() const { return id_; }
  std::string locator() const { return fabric_->locator(); }

  // Connects to `other` and waits until both directions are linked.
  absl::Status ConnectTo(MsgTestNode& other);

 private:
  NodeId id_ = 0;
  std::unique_ptr<Fabric> fabric_;
  std::vector<std::unique_ptr<LoopThread>> loops_;
  std::unique_ptr<Messenger> messenger_;
};

// Waits until `pred` holds, checking every millisecond. False at the timeout.
bool WaitUntil(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(10));

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_MSG_TEST_NODE_H_
