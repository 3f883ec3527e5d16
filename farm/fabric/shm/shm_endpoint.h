// ShmEndpoint: the initiator side of an shm connection.
//
// Post executes the op on this process's mapping of the target region, on the calling
// thread, and queues its completion: the target's CPU is not involved. The first op on
// a region (and the first notify of a doorbell) fetches its descriptor from the owner
// over the control socket, a blocking round trip paid once per region per process.
//
// Owning thread only (the thread that polls its completion queue).
#ifndef FARM_FABRIC_SHM_SHM_ENDPOINT_H_
#define FARM_FABRIC_SHM_SHM_ENDPOINT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/fabric.h"
#include "farm/fabric/region_table.h"
#include "farm/fabric/shm/shm_peer.h"
#include "farm/fabric/shm/shm_wire.h"
#include "farm/fabric/socket_completion_queue.h"

namespace farm {

struct ShmEndpointConfig {
  const RegionTable* local_regions;  // this node's registrations (lkey checks)
  uint32_t max_op_bytes;
  absl::Duration control_timeout;
};

class ShmEndpoint final : public Endpoint, public SocketEndpointBase {
 public:
  // Performs the post-handshake set-up on `control` (fetches the peer's tables) and
  // finds or creates the shared ShmPeer through `find_peer`.
  using PeerFinder = std::function<std::shared_ptr<ShmPeer>(uint64_t instance, Region region_table,
                                                            uint32_t region_capacity,
                                                            Region doorbells,
                                                            uint32_t doorbell_capacity)>;
  static absl::StatusOr<std::unique_ptr<ShmEndpoint>> Create(const ShmEndpointConfig& config,
                                                             UniqueFd control,
                                                             SocketCompletionQueue* cq,
                                                             uint64_t context,
                                                             const PeerFinder& find_peer);
  ~ShmEndpoint() override;

  absl::Status Post(const WorkRequest& wr) override;
  absl::Status PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted) override;
  absl::Status status() const override { return status_; }
  uint64_t context() const override { return context_; }
  void OnSocketReady(uint32_t events) override;

 private:
  struct Mapping {
    char* base = nullptr;
    uint64_t size = 0;
  };

  ShmEndpoint(const ShmEndpointConfig& config, UniqueFd control, SocketCompletionQueue* cq,
              uint64_t context)
      : config_(config), control_(std::move(control)), cq_(cq), context_(context) {}

  // Where a request will land: its target, or why it cannot be executed.
  struct Target {
    CompletionStatus status = CompletionStatus::kSuccess;
    char* at = nullptr;
  };
  // The checks before a request is accepted (endpoint state, shape, completion room).
  absl::Status Admit(const WorkRequest& wr);
  Target Resolve(const WorkRequest& wr);
  // Executes a resolved request and delivers its completion.
  void Perform(const WorkRequest& wr, const Target& target);
  // The local mapping for a capability, fetching it from the owner on first use.
  // nullptr when the owner refuses (or is gone: the endpoint then fails).
  const Mapping* FindOrMap(const RegionCapability& cap);
  int DoorbellFd(uint32_t id);
  absl::StatusOr<shm_wire::ResponseFrame> Call(shm_wire::Request type, uint32_t arg32,
                                               uint64_t arg64, std::vector<UniqueFd>* fds);
  void Fail(absl::Status why);

  const ShmEndpointConfig config_;
  UniqueFd control_;
  SocketCompletionQueue* const cq_;
  const uint64_t context_;
  std::shared_ptr<ShmPeer> peer_;
  absl::Status status_;
  absl::flat_hash_map<uint64_t, Mapping> mappings_;  // by rkey
  absl::flat_hash_map<uint32_t, int> doorbell_fds_;  // by doorbell id (the peer's, cached)
  uint64_t last_rkey_ = 0;
  Mapping last_mapping_;
};

}  // namespace farm

#endif  // FARM_FABRIC_SHM_SHM_ENDPOINT_H_
