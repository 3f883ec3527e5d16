// ShmServer: the shm backend's server thread. After the handshake it answers descriptor
// requests (shm_wire.h) for the fabric's tables, regions and doorbells.
#ifndef FARM_FABRIC_SHM_SHM_SERVER_H_
#define FARM_FABRIC_SHM_SHM_SERVER_H_

#include "farm/fabric/fabric_server.h"

namespace farm {

class ShmFabric;

class ShmServer final : public FabricServer {
 public:
  ShmServer(UniqueFd listen_fd, ClusterKey key, ShmFabric* fabric)
      : FabricServer(std::move(listen_fd), key, "shm fabric"), fabric_(fabric) {}
  ~ShmServer() override { Stop(); }

 protected:
  absl::Status ProcessInput(Conn& conn) override;

 private:
  ShmFabric* const fabric_;
};

}  // namespace farm

#endif  // FARM_FABRIC_SHM_SHM_SERVER_H_
