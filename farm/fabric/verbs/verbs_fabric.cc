#include "farm/fabric/verbs/verbs_fabric.h"

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "farm/fabric/socket_util.h"
#include "farm/fabric/verbs/verbs_completion_queue.h"
#include "farm/fabric/verbs/verbs_endpoint.h"

namespace farm {
namespace {

// Receives posted for WRITE-with-immediate wake-ups, shared by all responder QPs.
constexpr uint32_t kDoorbellReceives = 1024;

constexpr int kRegionAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

// On-demand paging for RC READ, WRITE and atomics, when the device has it: registering
// a large sparse region then commits no memory.
bool HasRcOdp(ibv_context* context) {
  ibv_device_attr_ex attr{};
  if (ibv_query_device_ex(context, nullptr, &attr) != 0) return false;
  constexpr uint32_t kNeeded = IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_ATOMIC;
  return (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0 &&
         (attr.odp_caps.per_transport_caps.rc_odp_caps & kNeeded) == kNeeded;
}

}  // namespace

absl::StatusOr<std::unique_ptr<VerbsFabric>> VerbsFabric::Create(const FabricOptions& options) {
  absl::StatusOr<ClusterKey> key = ClusterKey::FromSecret(options.cluster_secret);
  if (!key.ok()) return key.status();
  std::unique_ptr<VerbsFabric> fabric(new VerbsFabric(options, *key));
  absl::StatusOr<std::unique_ptr<VerbsDevice>> device =
      VerbsDevice::Open(options.device, options.gid_index);
  if (!device.ok()) return device.status();
  fabric->device_ = std::move(*device);
  fabric->access_flags_ =
      kRegionAccess | (HasRcOdp(fabric->device_->context()) ? IBV_ACCESS_ON_DEMAND : 0);
  absl::StatusOr<std::unique_ptr<DoorbellTable>> doorbells =
      DoorbellTable::Create(options.max_doorbells);
  if (!doorbells.ok()) return doorbells.status();
  fabric->doorbells_ = std::move(*doorbells);
  absl::StatusOr<std::unique_ptr<VerbsDoorbellReceiver>> receiver =
      VerbsDoorbellReceiver::Create(*fabric->device_, fabric->doorbells_.get(), kDoorbellReceives);
  if (!receiver.ok()) return receiver.status();
  fabric->receiver_ = std::move(*receiver);

  absl::StatusOr<PeerListener> listener =
      ListenTcpForPeers(options.listen_address, "verbs fabric's control socket");
  if (!listener.ok()) return listener.status();
  fabric->address_ = std::move(listener->address);
  fabric->server_ = std::make_unique<VerbsServer>(std::move(listener->fd), *key,
                                                  fabric->device_.get(), fabric->receiver_.get());
  return fabric;
}

VerbsFabric::~VerbsFabric() {
  // Responder QPs (owned by the server's connections) go before the shared receive
  // queue they use, and memory regions before the protection domain.
  server_.reset();
  receiver_.reset();
  MutexLock lock(&mu_);
  for (auto& [id, mr] : regions_) ibv_dereg_mr(mr);
  regions_.clear();
}

absl::StatusOr<RegisteredRegion> VerbsFabric::RegisterRegion(const Region& region) {
  MutexLock lock(&mu_);
  if (regions_.contains(region.id())) {
    return absl::AlreadyExistsError(absl::StrCat("region ", region.id(), " is already registered"));
  }
  if (regions_.size() >= options_.max_regions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("max_regions (", options_.max_regions, ") regions are registered"));
  }
  ibv_mr* mr = ibv_reg_mr(device_->pd(), region.base(), region.size(), access_flags_);
  if (mr == nullptr) {
    const int error = errno;
    return absl::ResourceExhaustedError(absl::StrCat(
        "ibv_reg_mr of region ", region.id(), " (", region.size(), " bytes) on ", device_->name(),
        ": ", strerror(error),
        error == ENOMEM || error == EPERM ? " (registered memory is pinned: check `ulimit -l`)" : ""));
  }
  regions_.emplace(region.id(), mr);
  RegisteredRegion out;
  out.local = {region.id(), mr->lkey, region.base(), region.size()};
  out.capability.region = region.id();
  out.capability.length = region.size();
  out.capability.rkey = mr->rkey;
  out.capability.remote_base = reinterpret_cast<uintptr_t>(region.base());
  return out;
}

absl::Status VerbsFabric::DeregisterRegion(RegionId region) {
  MutexLock lock(&mu_);
  auto it = regions_.find(region);
  if (it == regions_.end()) {
    return absl::NotFoundError(absl::StrCat("region ", region, " is not registered"));
  }
  // On return the device has invalidated the key: later ops fail with a remote access
  // error and none touches the region.
  if (const int rc = ibv_dereg_mr(it->second); rc != 0) {
    return absl::ErrnoToStatus(rc, absl::StrCat("ibv_dereg_mr of region ", region));
  }
  regions_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CompletionQueue>> VerbsFabric::CreateCompletionQueue() {
  absl::StatusOr<std::unique_ptr<VerbsCompletionQueue>> cq =
      VerbsCompletionQueue::Create(*device_, options_.cq_depth);
  if (!cq.ok()) return cq.status();
  return std::unique_ptr<CompletionQueue>(std::move(*cq));
}

absl::StatusOr<std::unique_ptr<Doorbell>> VerbsFabric::CreateDoorbell() {
  return doorbells_->Allocate();
}

absl::Status VerbsFabric::Listen(AcceptHandler handler) { return server_->Start(std::move(handler)); }

absl::StatusOr<Connection> VerbsFabric::Connect(absl::string_view locator, absl::string_view hello,
                                                CompletionQueue* cq, uint64_t context) {
  constexpr absl::string_view kScheme = "verbs:";
  if (!absl::StartsWith(locator, kScheme)) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs fabric cannot reach '", locator, "': want verbs:<host>:<port>"));
  }
  auto* own = dynamic_cast<VerbsCompletionQueue*>(cq);
  if (own == nullptr || &own->device() != device_.get()) {
    return absl::InvalidArgumentError("completion queue was not created by this fabric");
  }
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  absl::StatusOr<UniqueFd> fd = ConnectTcp(locator.substr(kScheme.size()), deadline);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<std::string> reply = ClientHandshake(fd->get(), key_, hello, deadline);
  if (!reply.ok()) return reply.status();
  const VerbsEndpointConfig config{options_.max_op_bytes, options_.max_outstanding,
                                   options_.connect_timeout};
  absl::StatusOr<std::unique_ptr<VerbsEndpoint>> ep =
      VerbsEndpoint::Connect(config, std::move(*fd), own, context);
  if (!ep.ok()) return ep.status();
  return Connection{std::move(*ep), std::move(*reply)};
}

}  // namespace farm
