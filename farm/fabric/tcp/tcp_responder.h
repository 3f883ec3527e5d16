// TcpResponder: the tcp backend's software NIC. One thread executes the one-sided ops
// peers send on this node's registered regions, with the same checks and the same CPU
// copy semantics as shm (cpu_copy.h), and rings doorbells for WRITEs with notify.
// It blocks in epoll when idle.
#ifndef FARM_FABRIC_TCP_TCP_RESPONDER_H_
#define FARM_FABRIC_TCP_TCP_RESPONDER_H_

#include "farm/fabric/doorbell.h"
#include "farm/fabric/fabric_server.h"
#include "farm/fabric/region_table.h"

namespace farm {

class TcpResponder final : public FabricServer {
 public:
  TcpResponder(UniqueFd listen_fd, ClusterKey key, const RegionTable* regions,
               DoorbellTable* doorbells, uint32_t max_op_bytes)
      : FabricServer(std::move(listen_fd), key, "tcp fabric"),
        regions_(regions),
        doorbells_(doorbells),
        max_op_bytes_(max_op_bytes) {}
  ~TcpResponder() override { Stop(); }

 protected:
  absl::Status ProcessInput(Conn& conn) override;

 private:
  const RegionTable* const regions_;
  DoorbellTable* const doorbells_;
  const uint32_t max_op_bytes_;
};

}  // namespace farm

#endif  // FARM_FABRIC_TCP_TCP_RESPONDER_H_
