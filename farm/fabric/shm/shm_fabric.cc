#include "farm/fabric/shm/shm_fabric.h"

#include <sodium.h>
#include <unistd.h>

#include "absl/container/flat_hash_map.h"
#include "farm/fabric/shm/shm_endpoint.h"
#include "farm/fabric/shm/shm_server.h"
#include "farm/fabric/socket_util.h"

namespace farm {

absl::StatusOr<std::unique_ptr<ShmFabric>> ShmFabric::Create(const FabricOptions& options) {
  absl::StatusOr<ClusterKey> key = ClusterKey::FromSecret(options.cluster_secret);
  if (!key.ok()) return key.status();
  if (options.listen_address.empty()) {
    return absl::InvalidArgumentError("shm fabric needs listen_address: a Unix socket path");
  }
  std::unique_ptr<ShmFabric> fabric(new ShmFabric(options, *key));
  if (absl::Status s = fabric->InitTables(); !s.ok()) return s;
  absl::StatusOr<UniqueFd> listen_fd = ListenUnix(options.listen_address);
  if (!listen_fd.ok()) return listen_fd.status();
  fabric->set_server(std::make_unique<ShmServer>(std::move(*listen_fd), *key, fabric.get()));
  return fabric;
}

ShmFabric::ShmFabric(const FabricOptions& options, ClusterKey key)
    : SocketFabric(options, key), instance_([] {
        uint64_t v;
        randombytes_buf(&v, sizeof(v));
        return v;
      }()) {}

ShmFabric::~ShmFabric() {
  StopServer();
  ::unlink(options().listen_address.c_str());
}

void ShmFabric::OnRegistered(const Region& region) {
  MutexLock lock(&mu_);
  region_fds_[region.id()] = region.fd();
}

void ShmFabric::OnDeregistered(RegionId region) {
  MutexLock lock(&mu_);
  region_fds_.erase(region);
}

int ShmFabric::RegionFd(RegionId region, uint64_t rkey, uint64_t* length) const {
  *length = ValidateRkey(regions().shared_slots(), regions().capacity(), region, rkey);
  if (*length == 0) return -1;
  MutexLock lock(&mu_);
  auto it = region_fds_.find(region);
  return it == region_fds_.end() ? -1 : it->second;
}

std::shared_ptr<ShmPeer> ShmFabric::FindOrAddPeer(uint64_t instance, Region region_table,
                                                  uint32_t region_capacity, Region doorbells,
                                                  uint32_t doorbell_capacity) {
  MutexLock lock(&mu_);
  absl::erase_if(peers_, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<ShmPeer>& slot = peers_[instance];
  if (std::shared_ptr<ShmPeer> existing = slot.lock()) return existing;
  auto peer = std::make_shared<ShmPeer>(instance, std::move(region_table), region_capacity,
                                        std::move(doorbells), doorbell_capacity);
  slot = peer;
  return peer;
}

absl::StatusOr<UniqueFd> ShmFabric::OpenSocket(absl::string_view address, absl::Time deadline) {
  return ConnectUnix(address, deadline);
}

absl::StatusOr<Connection> ShmFabric::Connect(absl::string_view locator, absl::string_view hello,
                                              CompletionQueue* cq, uint64_t context) {
  absl::StatusOr<Authenticated> conn = ConnectAndAuthenticate(locator, hello, cq);
  if (!conn.ok()) return conn.status();
  ShmEndpointConfig config{&regions(), options().max_op_bytes, options().connect_timeout};
  absl::StatusOr<std::unique_ptr<ShmEndpoint>> ep = ShmEndpoint::Create(
      config, std::move(conn->socket), conn->cq, context,
      [this](uint64_t instance, Region rt, uint32_t rc, Region db, uint32_t dc) {
        return FindOrAddPeer(instance, std::move(rt), rc, std::move(db), dc);
      });
  if (!ep.ok()) return ep.status();
  return Connection{std::move(*ep), std::move(conn->reply)};
}

}  // namespace farm
