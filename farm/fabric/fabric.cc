#include "farm/fabric/fabric.h"

#include "absl/strings/str_cat.h"
#include "farm/fabric/shm/shm_fabric.h"
#include "farm/fabric/tcp/tcp_fabric.h"
#include "farm/fabric/verbs/verbs_fabric.h"

namespace farm {

absl::Status Endpoint::PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted) {
  for (*posted = 0; *posted < wrs.size(); ++*posted) {
    if (absl::Status s = Post(wrs[*posted]); !s.ok()) return s;
  }
  return absl::OkStatus();
}

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
  if (options.backend == "verbs") {
    absl::StatusOr<std::unique_ptr<VerbsFabric>> f = VerbsFabric::Create(options);
    if (!f.ok()) return f.status();
    return std::unique_ptr<Fabric>(std::move(*f));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown fabric backend '", options.backend, "': want shm, tcp or verbs"));
}

}  // namespace farm
