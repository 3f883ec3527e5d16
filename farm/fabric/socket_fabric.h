// SocketFabric: what the CPU backends (shm, tcp) share. Owns the cluster key, the
// registration table, the doorbell table and the FabricServer thread, and implements
// the parts of Fabric that do not depend on how ops travel.
#ifndef FARM_FABRIC_SOCKET_FABRIC_H_
#define FARM_FABRIC_SOCKET_FABRIC_H_

#include <memory>
#include <string>

#include "farm/fabric/doorbell.h"
#include "farm/fabric/fabric.h"
#include "farm/fabric/fabric_server.h"
#include "farm/fabric/handshake.h"
#include "farm/fabric/region_table.h"
#include "farm/fabric/socket_completion_queue.h"

namespace farm {

class SocketFabric : public Fabric {
 public:
  ~SocketFabric() override;

  absl::StatusOr<RegisteredRegion> RegisterRegion(const Region& region) override;
  absl::Status DeregisterRegion(RegionId region) override;
  absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCompletionQueue() override;
  absl::StatusOr<std::unique_ptr<Doorbell>> CreateDoorbell() override;
  absl::Status Listen(AcceptHandler handler) override;

  const FabricOptions& options() const { return options_; }
  const ClusterKey& key() const { return key_; }
  const RegionTable& regions() const { return *regions_; }
  DoorbellTable& doorbells() const { return *doorbells_; }

 protected:
  SocketFabric(const FabricOptions& options, ClusterKey key) : options_(options), key_(key) {}
  // Creates the tables; call from the subclass's factory before anything else.
  absl::Status InitTables();
  // Installs the server (after InitTables); the subclass creates it around its socket.
  void set_server(std::unique_ptr<FabricServer> server) { server_ = std::move(server); }
  FabricServer* server() const { return server_.get(); }
  // Stops the server thread; subclass destructors call it before their state goes.
  void StopServer();

  // The common first half of Connect: checks the locator's scheme ("<scheme>:<address>")
  // and that `cq` is ours, opens the socket (OpenSocket), and runs the authenticated
  // handshake. The backend then builds its endpoint on the result.
  struct Authenticated {
    UniqueFd socket;
    std::string reply;
    SocketCompletionQueue* cq;
  };
  absl::StatusOr<Authenticated> ConnectAndAuthenticate(absl::string_view locator,
                                                       absl::string_view hello,
                                                       CompletionQueue* cq);
  // Opens a connected socket to `address` (the locator without its scheme).
  virtual absl::StatusOr<UniqueFd> OpenSocket(absl::string_view address,
                                              absl::Time deadline) = 0;

  // Hooks for backends that track registrations themselves (shm keeps fds).
  virtual void OnRegistered(const Region& region) {}
  virtual void OnDeregistered(RegionId region) {}

 private:
  const FabricOptions options_;
  const ClusterKey key_;
  std::unique_ptr<RegionTable> regions_;
  std::unique_ptr<DoorbellTable> doorbells_;
  std::unique_ptr<FabricServer> server_;
};

}  // namespace farm

#endif  // FARM_FABRIC_SOCKET_FABRIC_H_
