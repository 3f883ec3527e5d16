// Messenger: a node's messaging layer (paper section 3.1): ring-buffer channels on
// fabric WRITEs between the worker threads of all nodes, message handlers, and RPC.
//
// Set-up: Create with the node's fabric and one event loop per worker thread, register
// handlers, Start, then Connect to each peer (membership drives this later). A
// connection gives each local thread a ring on the peer; a peer that connects to us is
// connected back automatically, so links become symmetric.
//
// Threads: Create, RegisterHandler, Start and Connect run on any thread that is not a
// worker (Connect blocks on the network). Per-thread sending and receiving happens on
// the workers through thread(i) (see msg_thread.h). Destroy the Messenger while its
// loops still run, or after they have stopped for good; the fabric must outlive it.
#ifndef FARM_MSG_MESSENGER_H_
#define FARM_MSG_MESSENGER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "absl/time/time.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/message.h"
#include "farm/msg/msg_buffers.h"
#include "farm/msg/msg_thread.h"

namespace farm {

inline constexpr uint32_t kSessionVersion = 1;

struct MessengerOptions {
  NodeId node_id = 0;
  // Every node of a cluster must use the same ring size. A message may carry up to a
  // quarter of it (less 32 bytes of framing).
  uint32_t ring_bytes = 256u << 10;
  // Incoming rings (= peers x their threads) and outgoing ones this node can hold.
  uint32_t max_rings = 256;
  // Per outgoing ring: bytes of messages that may wait for room before Send fails.
  size_t max_backlog_bytes = 8u << 20;
  absl::Duration default_rpc_timeout = absl::Seconds(30);
  // How long Connect waits for the peer to connect back.
  absl::Duration link_timeout = absl::Seconds(10);
  RegionId buffer_region = kFirstPrivateRegion;
};

// The hello for a fabric connection that only wants one-sided access to a node (a
// tool, a benchmark): accepted by the node's messenger without giving it a ring.
std::string OneSidedHello(NodeId from);

class Messenger {
 public:
  static absl::StatusOr<std::unique_ptr<Messenger>> Create(Fabric* fabric,
                                                           std::vector<EventLoop*> loops,
                                                           const MessengerOptions& options);
  ~Messenger();

  // msgRegisterHandler. Before Start; a later registration is refused. `registrant`
  // names the layer or service registering: a second handler for an id is refused with
  // AlreadyExists naming both registrants and the owner of the id's range
  // (farm/msg/message_ids.h).
  absl::Status RegisterHandler(MsgId id, MessageHandler handler, absl::string_view registrant = "");

  // Installs the per-thread pollers and starts accepting peers.
  absl::Status Start();

  // Gives every local thread a ring on `peer` (at `locator`), then waits until the
  // peer has connected back and every peer thread has announced its link over it
  // (kLinkUpMsgId), so that on return messages and responses flow both ways. Idempotent: linked threads are skipped.
  // Errors: those of Fabric::Connect; FailedPrecondition when the node there is not
  // `peer` or its protocol or ring size differs; DeadlineExceeded when the peer does not
  // connect back within link_timeout.
  absl::Status Connect(NodeId peer, absl::string_view locator);
  // True when links work both ways: every local thread has a ring on `peer` and every
  // thread of `peer` has announced its link to us.
  bool IsConnected(NodeId peer) const;

  MsgThread& thread(size_t i) const { return *threads_[i]; }
  size_t thread_count() const { return threads_.size(); }
  NodeId node_id() const { return options_.node_id; }
  const MessengerOptions& options() const { return options_; }
  MsgBuffers& buffers() const { return *buffers_; }
  // The registered handler for `id`, or null. Any thread after Start.
  const MessageHandler* handler(MsgId id) const;

  // MsgThread::DropPeer on every thread (posted to their loops; returns at once).
  void DropPeer(NodeId node, const absl::Status& why);

  // Called by a MsgThread whose link to `node` failed.
  void OnLinkDown(NodeId node, uint16_t thread, uint64_t session);
  // Called by a MsgThread that received the link-up of `node`'s thread `thread`.
  void OnLinkUp(NodeId node, uint16_t thread, uint64_t session);

 private:
  // What fabric callbacks reach; null once the Messenger is being destroyed.
  struct Guard {
    Mutex mu;
    Messenger* owner ABSL_GUARDED_BY(mu) = nullptr;
  };
  // What this node knows of a peer's messenger instance and its links to it.
  struct PeerLinks {
    std::string locator;
    uint64_t known_session = 0;          // the newest instance seen (accept or connect)
    std::vector<uint64_t> linked;        // per local thread: session linked to, 0 = none
    uint32_t thread_count = 0;           // the peer's
    uint64_t up_session = 0;                  // the instance whose threads...
    absl::flat_hash_set<uint16_t> up_threads;  // ...have announced links to us
  };

  Messenger(Fabric* fabric, std::vector<EventLoop*> loops, const MessengerOptions& options);
  absl::StatusOr<AcceptResult> Accept(absl::string_view hello);
  absl::Status ConnectThread(NodeId peer, absl::string_view locator, uint16_t thread);
  void ConnectBackLoop();
  void QueueConnectBack(NodeId node, const std::string& locator) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool BothWays(const PeerLinks& peer) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnInboundClosed(NodeId node, uint16_t thread, uint64_t session);

  Fabric* const fabric_;
  const std::vector<EventLoop*> loops_;
  const MessengerOptions options_;
  const uint64_t session_;
  std::unique_ptr<MsgBuffers> buffers_;
  std::vector<std::unique_ptr<MsgThread>> threads_;
  absl::flat_hash_map<MsgId, MessageHandler> handlers_;  // frozen at Start
  absl::flat_hash_map<MsgId, std::string> registrants_;   // who registered each handler
  bool started_ = false;
  std::shared_ptr<Guard> guard_;

  Mutex connect_mu_;  // one Connect at a time
  mutable Mutex mu_;
  absl::flat_hash_map<NodeId, PeerLinks> peers_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<NodeId, std::string>> connect_back_ ABSL_GUARDED_BY(mu_);
  CondVar connect_back_cv_;  // signalled when connect_back_ grows or stopping_ is set
  CondVar links_cv_;         // signalled when links or inbound rings change
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread connector_;
};

}  // namespace farm

#endif  // FARM_MSG_MESSENGER_H_
