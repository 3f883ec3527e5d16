// TableHost: one machine's part of FaRM's hopscotch hashtable. Install it on every node
// before the node starts; it registers the table's message handlers (kv/messages.h):
// the catalog's (kv/shard_catalog.h: directory, open, map) and the updates'.
//
//   CreateShards   allocates this machine's shards (runs of adjacent buckets) and
//                  publishes them in its directory, kept as durable metadata
//                  (ShardCatalog::CreateShards).
//   Open           the whole table, decided once for the cluster by the catalog
//                  coordinator (ShardCatalog::Open), as this machine's ShardMap: every
//                  machine builds the same one from the same shards.
//   updates        shipped updates arriving here run in the receiving thread's
//                  UpdateExecutor (flat combining, single-machine transactions;
//                  kv/update_dispatch.h).
//
// Threads: CreateShards and Open run on the calling worker thread (their continuations
// too); the map is guarded for the other threads; each thread's executor is touched by
// that thread only. Membership changes after Open are not followed (no re-sharding;
// see kv/README.md).
#ifndef FARM_KV_TABLE_HOST_H_
#define FARM_KV_TABLE_HOST_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/messages.h"
#include "kv/shard_catalog.h"
#include "kv/shard_map.h"
#include "kv/store.h"
#include "kv/update_dispatch.h"
#include "kv/update_executor.h"

namespace farm::kv {

struct TableOptions {
  TableIdentity identity;  // the kv service's table unless another application's
  TableLayout layout;
  // Buckets this machine allocates (slots = buckets * H/2). Shards are runs of adjacent
  // buckets, at most one allocator block each.
  uint64_t buckets_per_node = 1 << 14;
};

class TableHost {
 public:
  static constexpr absl::Duration kOpenTimeout = ShardCatalog::kOpenTimeout;
  static constexpr uint32_t kBucketsPerAllocTx = ShardCatalog::kObjectsPerAllocTx;

  // Registers the handlers; call before the node starts.
  static absl::StatusOr<std::unique_ptr<TableHost>> Install(Host& host, TableOptions options);
  TableHost(const TableHost&) = delete;
  TableHost& operator=(const TableHost&) = delete;

  // FailedPrecondition once created. A failed creation (Unavailable while the node's
  // links to its backups come up) may be tried again; shards it allocated before
  // failing stay allocated, unused.
  void CreateShards(Context& ctx, Done<absl::Status> done);
  void Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const ShardMap>>> done);

  const TableOptions& options() const { return options_; }
  std::vector<Shard> local_shards() const { return catalog_->local_shards(); }
  // Sum over this machine's executors; call with the node stopped or quiescent.
  UpdateExecutorStats update_stats() const { return updates_->stats(); }

 private:
  TableHost(TableOptions options, std::unique_ptr<ShardCatalog> catalog);
  // Keeps the first map opened on this machine; returns the one every thread uses.
  std::shared_ptr<const ShardMap> Adopt(std::shared_ptr<const ShardMap> map);

  const TableOptions options_;
  const std::unique_ptr<ShardCatalog> catalog_;
  std::unique_ptr<UpdateDispatch> updates_;
  mutable Mutex mu_;
  std::shared_ptr<const ShardMap> map_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_HOST_H_
