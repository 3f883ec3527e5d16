// The fabric: the NIC as the rest of the system sees it.
//
// One narrow interface shaped like ibverbs, three backends chosen at run time:
//   shm   nodes on one host; the initiating thread executes each op on its own mapping
//         of the target's region (the target's CPU is not involved, as with RDMA).
//   tcp   a software NIC: a responder thread per node executes peers' ops on its
//         registered regions; works across hosts and network namespaces.
//   verbs rdma-core RC queue pairs on an RDMA device (verbs/verbs_fabric.h).
// Nothing above this header knows which backend runs.
//
// Objects and their threads:
//   Fabric           one per node process. RegisterRegion, CreateCompletionQueue,
//                    CreateDoorbell, Listen and Connect may be called from any thread.
//   CompletionQueue  owned by one thread (its event loop), which alone calls Poll.
//   Endpoint         the initiator side of a connection to one peer (a queue pair).
//                    Posts come from the thread that owns its completion queue.
//   Doorbell         see doorbell.h.
// A Fabric must outlive every object it created.
//
// Semantics every backend honours (the layers above rely on them):
//   - WRITE data becomes visible at the target in increasing address order — except on
//     software RDMA devices (Soft-RoCE), which copy each packet with the kernel's
//     memcpy, sometimes backwards; Fabric::WritesLandInAddressOrder says which.
//   - READ is not atomic; CPU backends report a change of the first 8 bytes during the
//     copy as Completion::torn.
//   - Every remote op is checked against the target region's bounds and current rkey
//     before memory is touched; a failure is an error completion, never a partial op.
//   - tcp (and shm) connections are authenticated: both sides prove knowledge of the
//     cluster secret before any request is read.
//   - Completions of one endpoint arrive in the order its requests were posted. When an
//     endpoint fails, each outstanding request completes with kTransportError, later
//     posts fail, and one Opcode::kDisconnect completion carrying the endpoint's
//     context value is delivered on its completion queue.
#ifndef FARM_FABRIC_FABRIC_H_
#define FARM_FABRIC_FABRIC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "farm/base/region.h"
#include "farm/fabric/doorbell.h"
#include "farm/fabric/work_request.h"

namespace farm {

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;

  // Moves up to out.size() completions into `out` and returns how many. Never blocks.
  // Owning thread only.
  virtual int Poll(absl::Span<Completion> out) = 0;

  // A file descriptor that becomes readable when Poll may have something to return that
  // the owning thread did not itself cause (a response arrived, a peer disconnected).
  // Event loops add it to the set they wait on before parking.
  virtual int wait_fd() const = 0;

  // The owner is about to sleep on wait_fd. Backends whose wait_fd must be armed (verbs
  // asks the device for a completion event) do it here; the owner then polls once more
  // before sleeping, so nothing that completed in between is missed. Owning thread only.
  virtual void PrepareToWait() {}
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Posts one work request; its completion arrives on the endpoint's completion queue.
  // Errors, after which no completion is produced:
  //   InvalidArgument     malformed request (zero length, misaligned atomic, atomic
  //                       length other than 8, missing capability, op over max_op_bytes)
  //   ResourceExhausted   max_outstanding requests are already in flight
  //   FailedPrecondition  the endpoint has failed (status() says why)
  virtual absl::Status Post(const WorkRequest& wr) = 0;

  // Posts `wrs` in order as one batch, like a chained ibv_post_send: backends may
  // overlap them (shm resolves and prefetches every target before copying; tcp sends
  // them with one write). Stops at the first request that cannot be posted and returns
  // its error (as Post would); `*posted` says how many were, and their completions
  // arrive as usual.
  virtual absl::Status PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted);

  // OK while the connection works; afterwards the reason it failed.
  virtual absl::Status status() const = 0;

  // The value passed to Connect, delivered with the kDisconnect completion.
  virtual uint64_t context() const = 0;
};

struct Connection {
  std::unique_ptr<Endpoint> endpoint;
  std::string reply;  // the peer's AcceptHandler reply
};

// Runs on a fabric thread when an authenticated peer connects, with the hello the peer
// passed to Connect. Returning an error refuses the connection and sends the error's
// message to the peer. `on_close`, if set, runs on a fabric thread when the connection
// ends (peer gone or fabric destroyed). The handler must not block for long.
struct AcceptResult {
  std::string reply;
  absl::AnyInvocable<void()> on_close;
};
using AcceptHandler = std::function<absl::StatusOr<AcceptResult>(absl::string_view hello)>;

struct FabricOptions {
  std::string backend = "tcp";  // "shm", "tcp" or "verbs" (see ChooseFabricBackend)
  // shm: path of the Unix socket to listen on. tcp and verbs (its control socket):
  // "host:port", port 0 for any.
  std::string listen_address;
  // verbs: the RDMA device ("mlx5_0", "rxe0"); empty for the first with an active port.
  std::string device;
  // verbs on RoCE: the GID table index; -1 picks a RoCEv2 GID with an IPv4 address.
  int gid_index = -1;
  // Shared by all members of a cluster; at least 16 bytes. Peers without it are refused.
  std::string cluster_secret;
  // Requests one endpoint may have in flight (send queue depth).
  uint32_t max_outstanding = 256;
  // Completions a completion queue can hold; posts beyond it fail ResourceExhausted.
  uint32_t cq_depth = 4096;
  // Largest READ or WRITE accepted, in bytes.
  uint32_t max_op_bytes = 16u << 20;
  // Registrations the node can hold at once, and doorbells it can create.
  uint32_t max_regions = 1024;
  uint32_t max_doorbells = 256;
  absl::Duration connect_timeout = absl::Seconds(5);
};

class Fabric {
 public:
  // Creates a backend and binds its listening socket (connections are accepted after
  // Listen). Errors: InvalidArgument for an unknown backend, a short secret or a bad
  // address; the system's error when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Fabric>> Create(const FabricOptions& options);

  virtual ~Fabric() = default;

  virtual absl::string_view backend() const = 0;

  // What peers pass to Connect to reach this node: "shm:<path>" or "tcp:<host>:<port>".
  virtual std::string locator() const = 0;

  // Makes `region` reachable by peers. The region must stay mapped until it is
  // deregistered (or the fabric destroyed). Fails ResourceExhausted when max_regions
  // are registered, AlreadyExists when the region id is.
  virtual absl::StatusOr<RegisteredRegion> RegisterRegion(const Region& region) = 0;

  // False when the bytes of one WRITE may land in any order (a software RDMA device);
  // a writer that needs its last word to land last (a ring record's trailer) then
  // posts that word as a separate WRITE: one endpoint's WRITEs land in post order.
  virtual bool WritesLandInAddressOrder() const { return true; }

  // True when registration pins a region's pages to the device (verbs without on-demand
  // paging): its memory must then never be given back with Region::Discard, which would
  // leave the NIC on the old pages and the CPU on new ones. Zero it instead.
  virtual bool PinsRegisteredMemory() const { return false; }

  // Revokes the region's capability: ops that have not passed the check fail with
  // kRemoteAccessError. On return no op of this node's responder touches the region.
  virtual absl::Status DeregisterRegion(RegionId region) = 0;

  virtual absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCompletionQueue() = 0;

  // A doorbell peers can ring with WorkRequest::notify (see doorbell.h).
  virtual absl::StatusOr<std::unique_ptr<Doorbell>> CreateDoorbell() = 0;

  // Starts accepting connections; `handler` decides on each. Call once.
  virtual absl::Status Listen(AcceptHandler handler) = 0;

  // Connects to the peer at `locator`, authenticates, and passes `hello` to its
  // AcceptHandler. Blocks up to connect_timeout. The endpoint's completions go to `cq`,
  // which must outlive it. Errors: Unavailable (peer unreachable or gone),
  // Unauthenticated (secrets differ), DeadlineExceeded, or the error the peer's
  // handler returned.
  virtual absl::StatusOr<Connection> Connect(absl::string_view locator, absl::string_view hello,
                                             CompletionQueue* cq, uint64_t context) = 0;
};

}  // namespace farm

#endif  // FARM_FABRIC_FABRIC_H_
