#include "kv/linear/linear_host.h"

#include <algorithm>
#include <utility>

#include "kv/linear/linear_ops.h"

namespace farm::kv::linear {

ShardFormat LinearFormat(const SlotLayout& layout) {
  return MakeShardFormat(kLinearDirectoryFormat, {layout.slots_per_group, layout.inline_key_bytes,
                                                  layout.inline_value_bytes});
}

absl::StatusOr<std::unique_ptr<LinearHost>> LinearHost::Install(Host& host, LinearOptions options) {
  if (absl::Status s = options.layout.Validate(); !s.ok()) return s;
  const uint32_t g = options.layout.slots_per_group;
  std::unique_ptr<LinearHost> table(new LinearHost(options));
  if (absl::Status s = table->InstallParts(
          host, {.identity = options.identity,
                 .format = LinearFormat(options.layout),
                 .object_bytes = options.layout.group_bytes(),
                 .objects_per_node = std::max<uint64_t>(2, (options.slots_per_node + g - 1) / g)});
      !s.ok()) {
    return s;
  }
  return table;
}

absl::StatusOr<std::shared_ptr<const LinearTable>> LinearHost::Build(
    const ShardList& shards) const {
  absl::StatusOr<ProbeMap> map = ProbeMap::Create(options_.layout, shards);
  if (!map.ok()) return map.status();
  return MakeLinearTable(std::make_shared<const ProbeMap>(std::move(*map)), options_.read);
}

std::shared_ptr<const KeyOpsApplier> LinearHost::MakeApplier(
    const std::shared_ptr<const LinearTable>& table) const {
  return std::make_shared<const LinearApplier>(table->map);
}

}  // namespace farm::kv::linear
