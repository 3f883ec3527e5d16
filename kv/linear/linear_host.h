// LinearHost: one machine's part of the linear-probing table, a CatalogHost
// (kv/catalog_host.h): shards are runs of adjacent slot groups (directory format 2:
// u32 G, u32 inline key bytes, u32 inline value bytes), the opened table is this
// machine's LinearTable (probe map and read sizes), and shipped updates run with the
// LinearApplier. Install it on every node before the node starts.
//
// Threads: as CatalogHost's.
#ifndef FARM_KV_LINEAR_LINEAR_HOST_H_
#define FARM_KV_LINEAR_LINEAR_HOST_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "kv/catalog_host.h"
#include "kv/linear/linear_table.h"
#include "kv/linear/read_size_model.h"
#include "kv/linear/slot_format.h"
#include "kv/messages.h"
#include "kv/shard_catalog.h"

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

class LinearHost final : public CatalogHost<std::shared_ptr<const LinearTable>> {
 public:
  // Registers the handlers; call before the node starts. InvalidArgument for an invalid
  // layout.
  static absl::StatusOr<std::unique_ptr<LinearHost>> Install(Host& host, LinearOptions options);

  const LinearOptions& options() const { return options_; }

 private:
  explicit LinearHost(LinearOptions options) : options_(std::move(options)) {}
  absl::StatusOr<std::shared_ptr<const LinearTable>> Build(const ShardList& shards) const override;
  std::shared_ptr<const KeyOpsApplier> MakeApplier(
      const std::shared_ptr<const LinearTable>& table) const override;

  const LinearOptions options_;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_HOST_H_
