// LinearHost: one machine's part of the linear-probing table. Install it on every node
// before the node starts; it registers the table's message handlers: the catalog's
// (kv/shard_catalog.h, directory format 2: u32 G, u32 inline key bytes, u32 inline
// value bytes) and the updates' (kv/update_dispatch.h, with LinearApplier).
//
//   CreateShards   allocates this machine's slot groups (runs of adjacent groups) and
//                  publishes them, kept as durable metadata.
//   Open           the table, decided once for the cluster by the catalog coordinator,
//                  as this machine's LinearTable (probe map and read sizes), built once
//                  and shared by its threads.
//
// Threads: as TableHost's (kv/table_host.h).
#ifndef FARM_KV_LINEAR_LINEAR_HOST_H_
#define FARM_KV_LINEAR_LINEAR_HOST_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/linear/linear_table.h"
#include "kv/linear/read_size_model.h"
#include "kv/linear/slot_format.h"
#include "kv/messages.h"
#include "kv/shard_catalog.h"
#include "kv/update_dispatch.h"

namespace farm::kv::linear {

struct LinearOptions {
  TableIdentity identity;
  SlotLayout layout;
  // Slots this machine allocates (rounded up to whole groups, at least 2 groups).
  uint64_t slots_per_node = 1 << 16;
  ReadSizeOptions read;  // how lookups choose R (not part of the directory)
};

// The layout as every machine's directory states it.
ShardFormat LinearFormat(const SlotLayout& layout);

class LinearHost {
 public:
  // Registers the handlers; call before the node starts. InvalidArgument for an invalid
  // layout.
  static absl::StatusOr<std::unique_ptr<LinearHost>> Install(Host& host, LinearOptions options);
  LinearHost(const LinearHost&) = delete;
  LinearHost& operator=(const LinearHost&) = delete;

  void CreateShards(Context& ctx, Done<absl::Status> done) { catalog_->CreateShards(ctx, std::move(done)); }
  void Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const LinearTable>>> done);

  const LinearOptions& options() const { return options_; }
  // Sum over this machine's executors; call with the node stopped or quiescent.
  UpdateExecutorStats update_stats() const { return updates_->stats(); }

 private:
  LinearHost(LinearOptions options, std::unique_ptr<ShardCatalog> catalog)
      : options_(std::move(options)), catalog_(std::move(catalog)) {}
  // Keeps the first table opened on this machine; returns the one every thread uses.
  std::shared_ptr<const LinearTable> Adopt(std::shared_ptr<const LinearTable> table);

  const LinearOptions options_;
  const std::unique_ptr<ShardCatalog> catalog_;
  std::unique_ptr<UpdateDispatch> updates_;
  mutable Mutex mu_;
  std::shared_ptr<const LinearTable> table_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_HOST_H_
