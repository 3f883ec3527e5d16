#include "kv/chained/chained_host.h"

#include <algorithm>
#include <utility>

#include "kv/chained/chained_ops.h"

namespace farm::kv::chained {

ShardFormat ChainedFormat(const BucketLayout& layout) {
  return MakeShardFormat(kChainedDirectoryFormat, {layout.slots_per_bucket, layout.inline_key_bytes,
                                                   layout.inline_value_bytes});
}

absl::StatusOr<std::unique_ptr<ChainedHost>> ChainedHost::Install(Host& host,
                                                                  ChainedOptions options) {
  if (absl::Status s = options.layout.Validate(); !s.ok()) return s;
  if (!(options.expansion.max_load > 0))
    return absl::InvalidArgumentError("chained: max_load must be > 0");
  std::unique_ptr<ChainedHost> table(new ChainedHost(options));
  if (absl::Status s = table->InstallParts(
          host, {.identity = options.identity,
                 .format = ChainedFormat(options.layout),
                 .object_bytes = options.layout.bucket_bytes(),
                 .objects_per_node = std::max<uint64_t>(2, options.buckets_per_node + 1)});
      !s.ok()) {
    return s;
  }
  return table;
}

ChainedHost::~ChainedHost() {
  // The expansions' coroutines use the Expander until they end.
  if (Expander* expander = this->expander(); expander != nullptr) expander->Stop();
}

absl::StatusOr<ChainedTable> ChainedHost::Build(const ShardList& shards) const {
  absl::StatusOr<PartitionMap> map = PartitionMap::Create(options_.layout, shards);
  if (!map.ok()) return map.status();
  ChainedTable table;
  table.map = std::make_shared<const PartitionMap>(std::move(*map));
  table.tables = std::make_shared<TableCache>(options_.layout.bucket_bytes());
  return table;
}

void ChainedHost::OnAdopted(const ChainedTable& table) {
  MutexLock lock(&mu_);
  expander_ = std::make_unique<Expander>(table, options_.expansion);
}

std::shared_ptr<const KeyOpsApplier> ChainedHost::MakeApplier(const ChainedTable& table) const {
  Expander* expander = this->expander();
  return std::make_shared<const ChainedApplier>(
      table, [expander](Context& c, uint32_t partition, int delta) {
        expander->Note(c, partition, delta);
      });
}

Expander* ChainedHost::expander() const {
  MutexLock lock(&mu_);
  return expander_.get();
}

}  // namespace farm::kv::chained
