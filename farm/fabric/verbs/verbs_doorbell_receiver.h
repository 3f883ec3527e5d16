// VerbsDoorbellReceiver: the target side of WRITE-with-immediate wake-ups.
//
// Every responder queue pair of a node takes its receives from one shared receive queue
// (SRQ). A peer's WRITE with `notify` is an RDMA WRITE with immediate data = the
// doorbell id (network order); it consumes one receive here after its data is placed.
// A thread blocked on the completion channel rings DoorbellTable[id] for each and posts
// the receive again, so the waiter sees the data when it wakes (doorbell.h invariant 2).
// Receives run out only under a burst of more than `depth` wake-ups in flight; the
// sender's QP then retries (receiver-not-ready, forever) until the thread catches up.
#ifndef FARM_FABRIC_VERBS_VERBS_DOORBELL_RECEIVER_H_
#define FARM_FABRIC_VERBS_VERBS_DOORBELL_RECEIVER_H_

#include <infiniband/verbs.h>

#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/doorbell.h"
#include "farm/fabric/verbs/verbs_device.h"

namespace farm {

class VerbsDoorbellReceiver {
 public:
  static absl::StatusOr<std::unique_ptr<VerbsDoorbellReceiver>> Create(const VerbsDevice& device,
                                                                        DoorbellTable* doorbells,
                                                                        uint32_t depth);
  // Stops the thread. Destroy every QP using srq() first.
  ~VerbsDoorbellReceiver();

  // For responder QPs: their receive queue and their (unused) send completions.
  ibv_srq* srq() const { return srq_; }
  ibv_cq* cq() const { return cq_; }

 private:
  VerbsDoorbellReceiver(DoorbellTable* doorbells, uint32_t depth)
      : doorbells_(doorbells), depth_(depth) {}
  absl::Status PostReceives(uint32_t n);
  void Run();
  // Handles every completion now in the queue.
  void Drain();

  DoorbellTable* const doorbells_;
  const uint32_t depth_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_srq* srq_ = nullptr;
  UniqueFd stop_fd_;
  std::thread thread_;
};

}  // namespace farm

#endif  // FARM_FABRIC_VERBS_VERBS_DOORBELL_RECEIVER_H_
