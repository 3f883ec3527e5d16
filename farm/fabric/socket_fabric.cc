#include "farm/fabric/socket_fabric.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace farm {

SocketFabric::~SocketFabric() { StopServer(); }

void SocketFabric::StopServer() {
  if (server_) server_->Stop();
}

absl::Status SocketFabric::InitTables() {
  absl::StatusOr<std::unique_ptr<RegionTable>> regions = RegionTable::Create(options_.max_regions);
  if (!regions.ok()) return regions.status();
  regions_ = std::move(*regions);
  absl::StatusOr<std::unique_ptr<DoorbellTable>> doorbells =
      DoorbellTable::Create(options_.max_doorbells);
  if (!doorbells.ok()) return doorbells.status();
  doorbells_ = std::move(*doorbells);
  return absl::OkStatus();
}

absl::StatusOr<RegisteredRegion> SocketFabric::RegisterRegion(const Region& region) {
  OnRegistered(region);
  absl::StatusOr<RegisteredRegion> registered = regions_->Register(region);
  if (!registered.ok()) OnDeregistered(region.id());
  return registered;
}

absl::Status SocketFabric::DeregisterRegion(RegionId region) {
  absl::Status status = regions_->Deregister(region);
  if (status.ok()) {
    OnDeregistered(region);
    // The revocation is visible; wait out a batch the server may be executing.
    if (server_) server_->WaitQuiescent();
  }
  return status;
}

absl::StatusOr<std::unique_ptr<CompletionQueue>> SocketFabric::CreateCompletionQueue() {
  absl::StatusOr<std::unique_ptr<SocketCompletionQueue>> cq =
      SocketCompletionQueue::Create(options_.cq_depth);
  if (!cq.ok()) return cq.status();
  return std::unique_ptr<CompletionQueue>(std::move(*cq));
}

absl::StatusOr<std::unique_ptr<Doorbell>> SocketFabric::CreateDoorbell() {
  return doorbells_->Allocate();
}

absl::Status SocketFabric::Listen(AcceptHandler handler) {
  return server_->Start(std::move(handler));
}

absl::StatusOr<SocketFabric::Authenticated> SocketFabric::ConnectAndAuthenticate(
    absl::string_view locator, absl::string_view hello, CompletionQueue* cq) {
  const std::string scheme = absl::StrCat(backend(), ":");
  if (!absl::StartsWith(locator, scheme)) {
    return absl::InvalidArgumentError(absl::StrCat(backend(), " fabric cannot reach '", locator,
                                                   "': want ", scheme, "<address>"));
  }
  auto* own = dynamic_cast<SocketCompletionQueue*>(cq);
  if (own == nullptr) {
    return absl::InvalidArgumentError("completion queue was not created by this fabric");
  }
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  absl::StatusOr<UniqueFd> fd = OpenSocket(locator.substr(scheme.size()), deadline);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<std::string> reply = ClientHandshake(fd->get(), key_, hello, deadline);
  if (!reply.ok()) return reply.status();
  return Authenticated{std::move(*fd), std::move(*reply), own};
}

}  // namespace farm
