#include "kv/table_host.h"

#include <utility>

#include "kv/table_ops.h"

namespace farm::kv {

absl::StatusOr<std::unique_ptr<TableHost>> TableHost::Install(Host& host, TableOptions options) {
  if (absl::Status s = options.layout.Validate(); !s.ok()) return s;
  if (options.buckets_per_node < 2)
    return absl::InvalidArgumentError("a node needs at least 2 buckets");
  std::unique_ptr<TableHost> table(new TableHost(options));
  if (absl::Status s = table->InstallParts(host, {.identity = options.identity,
                                                  .format = HopscotchFormat(options.layout),
                                                  .object_bytes = options.layout.bucket_bytes(),
                                                  .objects_per_node = options.buckets_per_node});
      !s.ok()) {
    return s;
  }
  return table;
}

absl::StatusOr<std::shared_ptr<const ShardMap>> TableHost::Build(const ShardList& shards) const {
  absl::StatusOr<ShardMap> built = ShardMap::Create(options_.layout, shards);
  if (!built.ok()) return built.status();
  return std::make_shared<const ShardMap>(std::move(*built));
}

std::shared_ptr<const KeyOpsApplier> TableHost::MakeApplier(
    const std::shared_ptr<const ShardMap>& map) const {
  return std::make_shared<const HopscotchApplier>(map);
}

}  // namespace farm::kv
