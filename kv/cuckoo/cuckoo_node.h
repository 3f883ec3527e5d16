// CuckooNode: the cuckoo (Nessie) table on one node process, the "cuckoo" KvTable
// (kv/kv_table.h): its CuckooHost (this machine's index and data tables) and a
// CuckooClient for every worker thread.
//
// Threads: as KvTable's.
#ifndef FARM_KV_CUCKOO_CUCKOO_NODE_H_
#define FARM_KV_CUCKOO_CUCKOO_NODE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "kv/cuckoo/cuckoo_client.h"
#include "kv/cuckoo/cuckoo_host.h"
#include "kv/kv_table.h"

namespace farm::kv::cuckoo {

class CuckooNode final : public KvTable {
 public:
  // Registers the table's handlers; call before the node starts. `layout` is the name
  // it was made by (kv/table_layouts.h).
  static absl::StatusOr<std::unique_ptr<CuckooNode>> Install(Host& host, CuckooOptions options,
                                                             std::string layout);
  ~CuckooNode() override;
  CuckooNode(const CuckooNode&) = delete;
  CuckooNode& operator=(const CuckooNode&) = delete;

  const std::string& layout() const override { return layout_; }
  absl::Status CreateShards() override;
  absl::Status Open() override;
  bool open() const override { return !clients_.empty(); }
  CuckooClient& client(size_t t) override { return *clients_.at(t); }

  CuckooHost& host() { return *host_; }

 private:
  CuckooNode(Host& node, std::unique_ptr<CuckooHost> host, std::string layout)
      : layout_(std::move(layout)), node_(node), host_(std::move(host)) {}
  const std::string layout_;
  Host& node_;
  std::unique_ptr<CuckooHost> host_;
  std::vector<std::unique_ptr<CuckooClient>> clients_;
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_CUCKOO_NODE_H_
