// VerbsServer: the passive side of the verbs backend, on the FabricServer thread.
//
// After the authenticated handshake, each connection carries the queue-pair exchange
// of verbs_qp.h: the server creates one responder QP per connection (receives from the
// node's shared receive queue), connects it to the initiator's QP, and replies with its
// address; later it resets and reconnects that QP when the initiator recovers from an
// error completion. Data never passes through this thread: the NIC serves READ, WRITE
// and atomics on registered memory. The responder QP is destroyed when the connection
// closes, so a vanished initiator leaves nothing behind.
#ifndef FARM_FABRIC_VERBS_VERBS_SERVER_H_
#define FARM_FABRIC_VERBS_VERBS_SERVER_H_

#include "farm/fabric/fabric_server.h"
#include "farm/fabric/verbs/verbs_device.h"
#include "farm/fabric/verbs/verbs_doorbell_receiver.h"

namespace farm {

class VerbsServer final : public FabricServer {
 public:
  VerbsServer(UniqueFd listen_fd, ClusterKey key, const VerbsDevice* device,
              const VerbsDoorbellReceiver* receiver)
      : FabricServer(std::move(listen_fd), key, "verbs fabric"),
        device_(device),
        receiver_(receiver) {}
  ~VerbsServer() override { Stop(); }

 protected:
  absl::Status ProcessInput(Conn& conn) override;

 private:
  const VerbsDevice* const device_;
  const VerbsDoorbellReceiver* const receiver_;
};

}  // namespace farm

#endif  // FARM_FABRIC_VERBS_VERBS_SERVER_H_
