// ChainedHost: one machine's part of the chained table (Mercury's chained hashing on
// FaRM objects). Install it on every node before the node starts; it registers the
// table's message handlers: the catalog's (kv/shard_catalog.h, directory format 3:
// u32 S, u32 inline key bytes, u32 inline value bytes) and the updates'
// (kv/update_dispatch.h, with ChainedApplier).
//
//   CreateShards   allocates this machine's initial buckets (runs of adjacent objects;
//                  each run is a partition: a root and its initial table) and
//                  publishes them, kept as durable metadata.
//   Open           the table, decided once for the cluster by the catalog coordinator,
//                  as this machine's ChainedTable (partition map, table cache) and
//                  Expander (the partitions whose roots this machine holds), built once
//                  and shared by its threads.
//
// Threads: as TableHost's (kv/table_host.h).
#ifndef FARM_KV_CHAINED_CHAINED_HOST_H_
#define FARM_KV_CHAINED_CHAINED_HOST_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/chained/bucket_format.h"
#include "kv/chained/expander.h"
#include "kv/chained/partition_map.h"
#include "kv/messages.h"
#include "kv/shard_catalog.h"
#include "kv/update_dispatch.h"

namespace farm::kv::chained {

struct ChainedOptions {
  TableIdentity identity;
  BucketLayout layout;
  // Initial buckets this machine allocates (plus one root per partition).
  uint64_t buckets_per_node = 1 << 14;
  ExpanderOptions expansion;
};

// The layout as every machine's directory states it.
ShardFormat ChainedFormat(const BucketLayout& layout);

class ChainedHost {
 public:
  // Registers the handlers; call before the node starts. InvalidArgument for an invalid
  // layout.
  static absl::StatusOr<std::unique_ptr<ChainedHost>> Install(Host& host, ChainedOptions options);
  // Stops this machine's expansions and waits for them (Expander::Stop): from a thread
  // that is not a worker thread, while the node runs (as KvTable's destructor).
  ~ChainedHost();
  ChainedHost(const ChainedHost&) = delete;
  ChainedHost& operator=(const ChainedHost&) = delete;

  void CreateShards(Context& ctx, Done<absl::Status> done) { catalog_->CreateShards(ctx, std::move(done)); }
  void Open(Context& ctx, Done<absl::StatusOr<ChainedTable>> done);

  const ChainedOptions& options() const { return options_; }
  // After Open: this machine's expansions (of the partitions it is primary for).
  Expander* expander() const;
  // Sum over this machine's executors; call with the node stopped or quiescent.
  UpdateExecutorStats update_stats() const { return updates_->stats(); }

 private:
  ChainedHost(ChainedOptions options, std::unique_ptr<ShardCatalog> catalog)
      : options_(std::move(options)), catalog_(std::move(catalog)) {}
  // Keeps the first table opened on this machine; returns the one every thread uses.
  ChainedTable Adopt(std::shared_ptr<const PartitionMap> map);

  const ChainedOptions options_;
  const std::unique_ptr<ShardCatalog> catalog_;
  std::unique_ptr<UpdateDispatch> updates_;
  mutable Mutex mu_;
  ChainedTable table_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Expander> expander_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_HOST_H_
