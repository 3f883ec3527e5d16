#include "farm/fabric/fabric.h"

#include "absl/strings/str_cat.h"
#include "farm/fabric/shm/shm_fabric.h"
#include "farm/fabric/tcp/tcp_fabric.h"

namespace farm {

absl::StatusOr<std::unique_ptr<Fabric>> Fabric::Create(const FabricOptions& options) {
  if (options.backend == "shm") {
    absl::StatusOr<std::unique_ptr<ShmFabric>> f = ShmFabric::Create(options);
    if (!f.ok()) return f.status();
    return std::unique_ptr<Fabric>(std::move(*f));
  }
  if (options.backend == "tcp") {
    absl::StatusOr<std::unique_ptr<TcpFabric>> f = TcpFabric::Create(options);
    if (!f.ok()) return f.status();
    return std::unique_ptr<Fabric>(std::move(*f));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown fabric backend '", options.backend, "': want shm or tcp"));
}

}  // namespace farm
