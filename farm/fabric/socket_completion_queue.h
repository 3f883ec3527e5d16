// SocketCompletionQueue: the completion queue of the CPU backends (shm, tcp).
//
// Holds completions (ClaimedCompletions, with one slot beyond the depth for each
// watched endpoint's kDisconnect) and watches the sockets of its endpoints with
// an epoll set, which is also its wait_fd: a parked event loop wakes when a response
// arrives or a peer hangs up. Poll asks epoll (without blocking) when some endpoint
// awaits responses, and otherwise at most every `liveness_interval`, so an idle
// endpoint's dead peer is noticed within that interval without a system call per poll.
//
// Owning thread only, like every completion queue, except Watch: endpoints are created
// (and register here) on whatever thread calls Fabric::Connect, then handed to the
// owning thread. They unregister in their destructor; the queue must outlive them.
#ifndef FARM_FABRIC_SOCKET_COMPLETION_QUEUE_H_
#define FARM_FABRIC_SOCKET_COMPLETION_QUEUE_H_

#include <algorithm>
#include <atomic>
#include <vector>
#include <chrono>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/completion_ring.h"
#include "farm/fabric/fabric.h"

namespace farm {

// An endpoint whose socket the queue watches.
class SocketEndpointBase {
 public:
  virtual ~SocketEndpointBase() = default;
  // The socket is readable, hung up or failed (epoll event bits).
  virtual void OnSocketReady(uint32_t events) = 0;
  // Sends requests the endpoint held back (see SocketCompletionQueue::HoldBack).
  virtual void SendHeldBack() {}
};

class SocketCompletionQueue final : public CompletionQueue, public ClaimedCompletions {
 public:
  static absl::StatusOr<std::unique_ptr<SocketCompletionQueue>> Create(uint32_t depth);

  int Poll(absl::Span<Completion> out) override;
  int wait_fd() const override { return epoll_fd_.get(); }

  // Watches an endpoint's socket for input and hang-up, and for room to write when
  // `want_write` (an endpoint with unsent output). Rewatch changes that interest.
  absl::Status Watch(int fd, SocketEndpointBase* endpoint, bool want_write);
  absl::Status Rewatch(int fd, SocketEndpointBase* endpoint, bool want_write);
  void Unwatch(int fd);

  // Endpoints with requests in flight; while non-zero, every Poll checks the sockets.
  void AddAwaiting(int delta) { awaiting_ += delta; }

  // Doorbell batching: an endpoint that holds requests back to send them with a later
  // one registers here, and the next Poll sends them (so they wait at most until the
  // owner polls, which an event loop does before it parks). Owning thread only.
  void HoldBack(SocketEndpointBase* endpoint) {
    if (std::find(held_back_.begin(), held_back_.end(), endpoint) == held_back_.end()) {
      held_back_.push_back(endpoint);
    }
  }
  void ForgetHeldBack(SocketEndpointBase* endpoint) { std::erase(held_back_, endpoint); }

 private:
  explicit SocketCompletionQueue(uint32_t depth, UniqueFd epoll_fd);
  void CheckSockets();

  UniqueFd epoll_fd_;
  // Written by the connecting thread (Watch), read by the owning thread: an endpoint is
  // published to the owner through this counter's release/acquire.
  std::atomic<int> watched_{0};
  std::vector<SocketEndpointBase*> held_back_;
  int awaiting_ = 0;
  LivenessSchedule liveness_{std::chrono::milliseconds(1)};
};

}  // namespace farm

#endif  // FARM_FABRIC_SOCKET_COMPLETION_QUEUE_H_
