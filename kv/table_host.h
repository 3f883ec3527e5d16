// TableHost: one machine's part of FaRM's hopscotch hashtable, a CatalogHost
// (kv/catalog_host.h) whose table is a ShardMap: shards are runs of adjacent buckets,
// every machine builds the same map from the same shards, and shipped updates run with
// the HopscotchApplier (flat combining, single-machine transactions). Install it on
// every node before the node starts; it registers the table's message handlers
// (kv/messages.h): the catalog's (directory, open, map) and the updates'.
//
// Threads: as CatalogHost's.
#ifndef FARM_KV_TABLE_HOST_H_
#define FARM_KV_TABLE_HOST_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "kv/catalog_host.h"
#include "kv/messages.h"
#include "kv/shard_catalog.h"
#include "kv/shard_map.h"
#include "kv/update_executor.h"

namespace farm::kv {

struct TableOptions {
  TableIdentity identity;  // the kv service's table unless another application's
  TableLayout layout;
  // Buckets this machine allocates (slots = buckets * H/2). Shards are runs of adjacent
  // buckets, at most one allocator block each.
  uint64_t buckets_per_node = 1 << 14;
};

class TableHost final : public CatalogHost<std::shared_ptr<const ShardMap>> {
 public:
  static constexpr absl::Duration kOpenTimeout = ShardCatalog::kOpenTimeout;
  static constexpr uint32_t kBucketsPerAllocTx = ShardCatalog::kObjectsPerAllocTx;

  // Registers the handlers; call before the node starts.
  static absl::StatusOr<std::unique_ptr<TableHost>> Install(Host& host, TableOptions options);

  const TableOptions& options() const { return options_; }

 private:
  explicit TableHost(TableOptions options) : options_(std::move(options)) {}
  absl::StatusOr<std::shared_ptr<const ShardMap>> Build(const ShardList& shards) const override;
  std::shared_ptr<const KeyOpsApplier> MakeApplier(
      const std::shared_ptr<const ShardMap>& map) const override;

  const TableOptions options_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_HOST_H_
