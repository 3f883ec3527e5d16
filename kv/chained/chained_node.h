// ChainedNode: the chained table on one node process, the "chained" KvTable
// (kv/kv_table.h): its ChainedHost (the table's handlers, this machine's partitions
// and their expansions) and a ChainedClient for every worker thread.
//
// Threads: as KvTable's.
#ifndef FARM_KV_CHAINED_CHAINED_NODE_H_
#define FARM_KV_CHAINED_CHAINED_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "kv/chained/chained_client.h"
#include "kv/chained/chained_host.h"
#include "kv/kv_table.h"

namespace farm::kv::chained {

class ChainedNode final : public KvTable {
 public:
  // Registers the table's handlers; call before the node starts. `layout` is the name
  // it was made by (kv/table_layouts.h).
  static absl::StatusOr<std::unique_ptr<ChainedNode>> Install(Host& host, ChainedOptions options, std::string layout);
  ~ChainedNode() override;
  ChainedNode(const ChainedNode&) = delete;
  ChainedNode& operator=(const ChainedNode&) = delete;

  const std::string& layout() const override { return layout_; }
  absl::Status CreateShards() override;
  absl::Status Open() override;
  bool open() const override { return !clients_.empty(); }
  ChainedClient& client(size_t t) override { return *clients_.at(t); }

  ChainedHost& host() { return *host_; }

 private:
  ChainedNode(Host& node, std::unique_ptr<ChainedHost> host, std::string layout)
      : layout_(std::move(layout)), node_(node), host_(std::move(host)) {}
  const std::string layout_;
  Host& node_;
  std::unique_ptr<ChainedHost> host_;
  std::vector<std::unique_ptr<ChainedClient>> clients_;
};

}  // namespace farm::kv::chained

#endif  // FARM_KV_CHAINED_CHAINED_NODE_H_
