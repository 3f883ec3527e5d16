// TcpEndpoint: the initiator side of a tcp connection.
//
// Post encodes the request (with a WRITE's data, so the local buffer is free again at
// once) and sends what the socket takes; the rest goes out as the socket drains. An
// unsignaled WRITE without notify is held back (doorbell batching) and leaves with the
// next request that is signalled, notifies or is not a WRITE, or at the next Poll of
// the completion queue: a ring record and the wake-up that follows it travel together.
// Responses are read when the completion queue is polled and matched to requests in
// order. A request that fails a local check is queued like the others so completions
// keep post order.
//
// Owning thread only (the thread that polls its completion queue).
#ifndef FARM_FABRIC_TCP_TCP_ENDPOINT_H_
#define FARM_FABRIC_TCP_TCP_ENDPOINT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/byte_buffer.h"
#include "farm/fabric/fabric.h"
#include "farm/fabric/region_table.h"
#include "farm/fabric/socket_completion_queue.h"

namespace farm {

struct TcpEndpointConfig {
  const RegionTable* local_regions;
  uint32_t max_op_bytes;
  uint32_t max_outstanding;
};

class TcpEndpoint final : public Endpoint, public SocketEndpointBase {
 public:
  static absl::StatusOr<std::unique_ptr<TcpEndpoint>> Create(const TcpEndpointConfig& config,
                                                             UniqueFd socket,
                                                             SocketCompletionQueue* cq,
                                                             uint64_t context);
  ~TcpEndpoint() override;

  absl::Status Post(const WorkRequest& wr) override;
  absl::Status PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted) override;
  absl::Status status() const override { return status_; }
  uint64_t context() const override { return context_; }
  void OnSocketReady(uint32_t events) override;
  void SendHeldBack() override { Flush(); }

 private:
  // A posted request awaiting its response (or, when !sent, its turn to complete).
  struct Pending {
    uint64_t wr_id;
    Opcode opcode;
    bool signaled;
    bool sent;                    // false: failed locally with `local_status`
    CompletionStatus local_status;
    void* local;
    uint32_t length;
  };

  TcpEndpoint(const TcpEndpointConfig& config, UniqueFd socket, SocketCompletionQueue* cq,
              uint64_t context);

  // Checks and encodes a request without sending it (Flush sends).
  absl::Status Queue(const WorkRequest& wr);
  void Enqueue(const Pending& p);
  Pending PopFront();
  void Finish(const Pending& p, CompletionStatus status, bool torn);
  // Completes requests at the front that never went out (local failures).
  void CompleteUnsent();
  void ParseResponses();
  void Flush();
  void Fail(absl::Status why);

  const TcpEndpointConfig config_;
  UniqueFd socket_;
  SocketCompletionQueue* const cq_;
  const uint64_t context_;
  absl::Status status_;
  ByteBuffer in_;
  ByteBuffer out_;
  bool want_write_ = false;
  std::vector<Pending> pending_;  // ring of max_outstanding entries
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace farm

#endif  // FARM_FABRIC_TCP_TCP_ENDPOINT_H_
