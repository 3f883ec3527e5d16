// ChainedHost: one machine's part of the chained table (Mercury's chained hashing on
// FaRM objects), a CatalogHost (kv/catalog_host.h): shards are the initial buckets
// (runs of adjacent objects; each run is a partition: a root and its initial table;
// directory format 3: u32 S, u32 inline key bytes, u32 inline value bytes), the opened
// table is this machine's ChainedTable (partition map, table cache) with its Expander
// (the partitions whose roots this machine holds), and shipped updates run with the
// ChainedApplier. Install it on every node before the node starts.
//
// Threads: as CatalogHost's.
#ifndef FARM_KV_CHAINED_CHAINED_HOST_H_
#define FARM_KV_CHAINED_CHAINED_HOST_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/catalog_host.h"
#include "kv/chained/bucket_format.h"
#include "kv/chained/expander.h"
#include "kv/chained/partition_map.h"
#include "kv/messages.h"
#include "kv/shard_catalog.h"

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

class ChainedHost final : public CatalogHost<ChainedTable> {
 public:
  // Registers the handlers; call before the node starts. InvalidArgument for an invalid
  // layout.
  static absl::StatusOr<std::unique_ptr<ChainedHost>> Install(Host& host, ChainedOptions options);
  // Stops this machine's expansions and waits for them (Expander::Stop): from a thread
  // that is not a worker thread, while the node runs (as KvTable's destructor).
  ~ChainedHost() override;

  const ChainedOptions& options() const { return options_; }
  // After Open: this machine's expansions (of the partitions it is primary for).
  Expander* expander() const;

 private:
  explicit ChainedHost(ChainedOptions options) : options_(std::move(options)) {}
  absl::StatusOr<ChainedTable> Build(const ShardList& shards) const override;
  // Starts the Expander on the table every thread uses.
  void OnAdopted(const ChainedTable& table) override;
  // A ChainedApplier whose committed batches reach the Expander.
  std::shared_ptr<const KeyOpsApplier> MakeApplier(const ChainedTable& table) const override;

  const ChainedOptions options_;
  mutable Mutex mu_;
  std::unique_ptr<Expander> expander_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_HOST_H_
