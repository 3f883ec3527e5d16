// VerbsEndpoint: the initiator side of a verbs connection — one RC queue pair to one
// peer, owned by the thread that polls its completion queue.
//
// Post maps a WorkRequest onto one ibv_send_wr (READ, WRITE, WRITE with immediate for
// `notify`, CAS, FETCH_ADD); PostBatch chains them into one ibv_post_send. Every posted
// request keeps a slot (in post order) until the device reports it, so completions can
// be delivered in order and with the caller's wr_id and opcode (an error work
// completion's opcode is undefined in verbs).
//
// Selective signalling: a request the caller did not signal is still signalled to the
// device every `max_outstanding / 4` posts, so the send queue drains even when the
// caller never asks for a completion; such internal completions are not delivered.
//
// Errors. An error completion moves an RC queue pair — and its peer's — to the error
// state, and every later request is flushed. The fabric contract is per request
// (a refused capability fails that op only), so the endpoint recovers: it delivers the
// failed request's error, lets the device flush the rest, resets both queue pairs over
// the control socket (verbs_qp.h) and posts the flushed requests again, in order.
// Transport errors (retries exhausted, the peer's socket closed) fail the endpoint as
// fabric.h says: outstanding requests complete with kTransportError, then kDisconnect.
#ifndef FARM_FABRIC_VERBS_VERBS_ENDPOINT_H_
#define FARM_FABRIC_VERBS_VERBS_ENDPOINT_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/fabric.h"
#include "farm/fabric/verbs/verbs_completion_queue.h"

namespace farm {

struct VerbsEndpointConfig {
  uint32_t max_op_bytes;
  uint32_t max_outstanding;
  // Bound on the queue-pair exchange when connecting and recovering.
  absl::Duration exchange_timeout;
};

class VerbsEndpoint final : public Endpoint {
 public:
  // Creates a queue pair on `cq` and connects it to the peer's over `control` (an
  // authenticated control socket, handshake done).
  static absl::StatusOr<std::unique_ptr<VerbsEndpoint>> Connect(const VerbsEndpointConfig& config,
                                                                UniqueFd control,
                                                                VerbsCompletionQueue* cq,
                                                                uint64_t context);
  ~VerbsEndpoint() override;

  absl::Status Post(const WorkRequest& wr) override;
  absl::Status PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted) override;
  absl::Status status() const override { return status_; }
  uint64_t context() const override { return context_; }

  // From the completion queue, on the owning thread.
  void OnWorkCompletion(const ibv_wc& wc);
  void OnControlSocketReady(uint32_t events);

 private:
  struct Slot {
    ibv_send_wr wr;  // as given to the device: wr_id is the sequence number
    ibv_sge sge;
    uint64_t user_wr_id;
    Opcode opcode;
    bool user_signaled;
    bool in_device;  // posted, not yet completed or flushed
  };

  VerbsEndpoint(const VerbsEndpointConfig& config, UniqueFd control, VerbsCompletionQueue* cq,
                ibv_qp* qp, uint64_t context);
  Slot& slot(uint64_t seq) { return slots_[seq % slots_.size()]; }
  // Checks `wr` and fills the next slot (tail_) without posting it.
  absl::Status Stage(const WorkRequest& wr);
  // Posts slots [from, tail_) as one chain. On a device refusal the slots it did not
  // take are dropped and their claims released.
  absl::Status PostStaged(uint64_t from);
  void Finish(uint64_t seq, CompletionStatus status, uint32_t byte_len);
  void Recover();
  void Fail(absl::Status why);

  const VerbsEndpointConfig config_;
  UniqueFd control_;
  VerbsCompletionQueue* const cq_;
  ibv_qp* const qp_;
  const uint64_t context_;
  const uint32_t signal_interval_;
  absl::Status status_;
  std::vector<Slot> slots_;  // a ring of max_outstanding slots
  uint64_t head_ = 0;        // oldest request not yet finished
  uint64_t tail_ = 0;        // next sequence number
  uint32_t in_device_ = 0;   // slots with in_device set
  uint32_t since_signal_ = 0;
  // After an error completion, until the queue pairs are reset: requests from
  // flushed_upto_ on may still be in the device; new posts wait.
  bool recovering_ = false;
  uint64_t flushed_upto_ = 0;
};

}  // namespace farm

#endif  // FARM_FABRIC_VERBS_VERBS_ENDPOINT_H_
