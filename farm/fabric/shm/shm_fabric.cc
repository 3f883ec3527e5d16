#include "farm/fabric/shm/shm_fabric.h"

#include <sodium.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/fabric/fabric_server.h"
#include "farm/fabric/shm/shm_endpoint.h"
#include "farm/fabric/shm/shm_wire.h"
#include "farm/fabric/socket_completion_queue.h"
#include "farm/fabric/socket_util.h"

namespace farm {

using shm_wire::Request;
using shm_wire::RequestFrame;
using shm_wire::ResponseFrame;

// Serves descriptor requests on established control connections.
class ShmServer final : public FabricServer {
 public:
  ShmServer(UniqueFd listen_fd, ClusterKey key, ShmFabric* fabric)
      : FabricServer(std::move(listen_fd), key, "shm fabric"), fabric_(fabric) {}
  ~ShmServer() override { Stop(); }

 protected:
  absl::Status ProcessInput(Conn& conn) override {
    const absl::Time deadline = absl::Now() + absl::Seconds(1);
    // Earlier output (the accept frame) goes first.
    if (absl::Status s = SendAll(conn.fd.get(), conn.out.data(), conn.out.size(), deadline);
        !s.ok()) {
      return s;
    }
    conn.out.Clear();
    while (conn.in.size() >= sizeof(RequestFrame)) {
      RequestFrame req;
      std::memcpy(&req, conn.in.data(), sizeof(req));
      conn.in.Consume(sizeof(req));
      ResponseFrame resp{};
      resp.type = req.type;
      std::vector<int> fds;
      switch (static_cast<Request>(req.type)) {
        case Request::kGetTables:
          resp.value = fabric_->instance_;
          resp.value2 = fabric_->regions_->capacity();
          resp.value3 = fabric_->doorbells_->capacity();
          fds = {fabric_->regions_->shared_memory().fd(),
                 fabric_->doorbells_->shared_slots().fd()};
          break;
        case Request::kMapRegion: {
          const int fd = fabric_->RegionFd(req.arg32, req.arg64, &resp.value);
          if (fd < 0) {
            resp.status = static_cast<uint32_t>(absl::StatusCode::kPermissionDenied);
          } else {
            fds = {fd};
          }
          break;
        }
        case Request::kGetDoorbell: {
          const int fd = fabric_->doorbells_->event_fd(req.arg32);
          if (fd < 0) {
            resp.status = static_cast<uint32_t>(absl::StatusCode::kNotFound);
          } else {
            fds = {fd};
          }
          break;
        }
        default:
          return absl::InvalidArgumentError(
              absl::StrFormat("unknown shm control request %u", req.type));
      }
      resp.fd_count = static_cast<uint32_t>(fds.size());
      if (absl::Status s = SendWithFds(conn.fd.get(), &resp, sizeof(resp), fds, deadline);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

 private:
  ShmFabric* const fabric_;
};

absl::StatusOr<std::unique_ptr<ShmFabric>> ShmFabric::Create(const FabricOptions& options) {
  absl::StatusOr<ClusterKey> key = ClusterKey::FromSecret(options.cluster_secret);
  if (!key.ok()) return key.status();
  if (options.listen_address.empty()) {
    return absl::InvalidArgumentError("shm fabric needs listen_address: a Unix socket path");
  }
  std::unique_ptr<ShmFabric> fabric(new ShmFabric(options, *key));
  absl::StatusOr<std::unique_ptr<RegionTable>> regions = RegionTable::Create(options.max_regions);
  if (!regions.ok()) return regions.status();
  fabric->regions_ = std::move(*regions);
  absl::StatusOr<std::unique_ptr<DoorbellTable>> doorbells =
      DoorbellTable::Create(options.max_doorbells);
  if (!doorbells.ok()) return doorbells.status();
  fabric->doorbells_ = std::move(*doorbells);
  absl::StatusOr<UniqueFd> listen_fd = ListenUnix(options.listen_address);
  if (!listen_fd.ok()) return listen_fd.status();
  fabric->server_ = std::make_unique<ShmServer>(std::move(*listen_fd), *key, fabric.get());
  return fabric;
}

ShmFabric::ShmFabric(const FabricOptions& options, ClusterKey key)
    : options_(options), key_(key), instance_([] {
        uint64_t v;
        randombytes_buf(&v, sizeof(v));
        return v;
      }()) {}

ShmFabric::~ShmFabric() {
  server_.reset();  // stops the server thread before the tables go
  ::unlink(options_.listen_address.c_str());
}

absl::StatusOr<RegisteredRegion> ShmFabric::RegisterRegion(const Region& region) {
  absl::StatusOr<RegisteredRegion> registered = regions_->Register(region);
  if (registered.ok()) {
    absl::MutexLock lock(&mu_);
    region_fds_[region.id()] = region.fd();
  }
  return registered;
}

absl::Status ShmFabric::DeregisterRegion(RegionId region) {
  {
    absl::MutexLock lock(&mu_);
    region_fds_.erase(region);
  }
  return regions_->Deregister(region);
}

int ShmFabric::RegionFd(RegionId region, uint64_t rkey, uint64_t* length) const {
  *length = ValidateRkey(regions_->shared_slots(), regions_->capacity(), region, rkey);
  if (*length == 0) return -1;
  absl::MutexLock lock(&mu_);
  auto it = region_fds_.find(region);
  return it == region_fds_.end() ? -1 : it->second;
}

absl::StatusOr<std::unique_ptr<CompletionQueue>> ShmFabric::CreateCompletionQueue() {
  absl::StatusOr<std::unique_ptr<SocketCompletionQueue>> cq =
      SocketCompletionQueue::Create(options_.cq_depth);
  if (!cq.ok()) return cq.status();
  return std::unique_ptr<CompletionQueue>(std::move(*cq));
}

absl::StatusOr<std::unique_ptr<Doorbell>> ShmFabric::CreateDoorbell() {
  return doorbells_->Allocate();
}

absl::Status ShmFabric::Listen(AcceptHandler handler) { return server_->Start(std::move(handler)); }

std::shared_ptr<ShmPeer> ShmFabric::FindOrAddPeer(uint64_t instance, Region region_table,
                                                  uint32_t region_capacity, Region doorbells,
                                                  uint32_t doorbell_capacity) {
  absl::MutexLock lock(&mu_);
  absl::erase_if(peers_, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<ShmPeer>& slot = peers_[instance];
  if (std::shared_ptr<ShmPeer> existing = slot.lock()) return existing;
  auto peer = std::make_shared<ShmPeer>(instance, std::move(region_table), region_capacity,
                                        std::move(doorbells), doorbell_capacity);
  slot = peer;
  return peer;
}

absl::StatusOr<Connection> ShmFabric::Connect(absl::string_view locator, absl::string_view hello,
                                              CompletionQueue* cq, uint64_t context) {
  if (!absl::StartsWith(locator, "shm:")) {
    return absl::InvalidArgumentError(
        absl::StrCat("shm fabric cannot reach '", locator, "': want shm:<socket path>"));
  }
  auto* socket_cq = dynamic_cast<SocketCompletionQueue*>(cq);
  if (socket_cq == nullptr) {
    return absl::InvalidArgumentError("completion queue was not created by this fabric");
  }
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  absl::StatusOr<UniqueFd> fd = ConnectUnix(locator.substr(4), deadline);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<std::string> reply = ClientHandshake(fd->get(), key_, hello, deadline);
  if (!reply.ok()) return reply.status();
  ShmEndpointConfig config{regions_.get(), options_.max_op_bytes, options_.connect_timeout};
  absl::StatusOr<std::unique_ptr<ShmEndpoint>> ep = ShmEndpoint::Create(
      config, std::move(*fd), socket_cq, context,
      [this](uint64_t instance, Region rt, uint32_t rc, Region db, uint32_t dc) {
        return FindOrAddPeer(instance, std::move(rt), rc, std::move(db), dc);
      });
  if (!ep.ok()) return ep.status();
  return Connection{std::move(*ep), std::move(*reply)};
}

}  // namespace farm
