// VerbsCompletionQueue: a completion queue of the verbs backend.
//
// Wraps one ibv_cq shared by the endpoints (queue pairs) of one thread. Poll hands each
// work completion to its endpoint, which turns it into the fabric's Completion (or into
// nothing: an unsignaled request's internal signal, a flushed request it will post
// again) and pushes it here; Poll then returns what is queued, in order.
//
// Waiting: wait_fd is an epoll set holding the completion channel and the endpoints'
// control sockets (a peer that goes away closes its socket). PrepareToWait drains old
// channel events and arms the CQ, so a completion after it makes wait_fd readable; the
// owner must Poll once more after PrepareToWait and before sleeping. Sockets are checked
// at most every millisecond while polling (liveness), so an idle endpoint to a vanished
// peer fails within about that.
//
// Threads: owning thread only, except Attach (the connecting thread registers an
// endpoint before handing it over) and Detach.
#ifndef FARM_FABRIC_VERBS_VERBS_COMPLETION_QUEUE_H_
#define FARM_FABRIC_VERBS_VERBS_COMPLETION_QUEUE_H_

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/completion_ring.h"
#include "farm/fabric/fabric.h"
#include "farm/fabric/verbs/verbs_device.h"

namespace farm {

class VerbsEndpoint;

class VerbsCompletionQueue final : public CompletionQueue, public ClaimedCompletions {
 public:
  static absl::StatusOr<std::unique_ptr<VerbsCompletionQueue>> Create(const VerbsDevice& device,
                                                                      uint32_t depth);
  // Destroy every endpoint attached to it first.
  ~VerbsCompletionQueue() override;

  int Poll(absl::Span<Completion> out) override;
  int wait_fd() const override { return epoll_fd_.get(); }
  void PrepareToWait() override;

  ibv_cq* cq() const { return cq_; }
  const VerbsDevice& device() const { return device_; }

  // Registers an endpoint's queue pair and control socket. Any thread.
  absl::Status Attach(VerbsEndpoint* endpoint, uint32_t qp_num, int control_fd);
  // Unregisters; the endpoint's later work completions are dropped. Any thread.
  void Detach(uint32_t qp_num, int control_fd);
  void StopWatching(int control_fd);

 private:
  VerbsCompletionQueue(const VerbsDevice& device, uint32_t depth);
  void PollDevice();
  void CheckSockets();
  // Takes and acknowledges every event the completion channel holds (non-blocking).
  void AckEvents();

  const VerbsDevice& device_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  UniqueFd epoll_fd_;

  mutable Mutex mu_;
  absl::flat_hash_map<uint32_t, VerbsEndpoint*> endpoints_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> watched_{0};
  LivenessSchedule liveness_{std::chrono::milliseconds(1)};
};

}  // namespace farm

#endif  // FARM_FABRIC_VERBS_VERBS_COMPLETION_QUEUE_H_
