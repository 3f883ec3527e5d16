// TableNode: the hashtable on one node process: its TableHost (the table's handlers and
// this machine's shards) and a TableClient for every worker thread. The same code runs
// in a farm_node process (kv/resp/kv_service.h) and in in-process test clusters
// (kv/local_kv_cluster.h), on the node's Host.
//
//   auto table = TableNode::Install(host, options);   // before the node starts
//   ... every machine's node starts ...
//   table->CreateShards();                            // on every machine, then
//   table->Open();                                    // waits for every member's shards
//
// Threads: Install, CreateShards, Open and the destructor are called from a thread that
// is not one of the host's worker threads, while the node runs; client(t) is used on
// worker thread t only. The destructor drops each client on its thread.
#ifndef FARM_KV_TABLE_NODE_H_
#define FARM_KV_TABLE_NODE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "kv/table_client.h"
#include "kv/table_host.h"

namespace farm::kv {

class TableNode {
 public:
  // Registers the table's handlers; call before the node starts.
  static absl::StatusOr<std::unique_ptr<TableNode>> Install(Host& host, TableOptions options);
  ~TableNode();
  TableNode(const TableNode&) = delete;
  TableNode& operator=(const TableNode&) = delete;

  // Allocates this machine's shards and publishes them (on worker thread 0), once the
  // node has joined the cluster (Host::ready); a failed allocation
  // (Unavailable, DeadlineExceeded) is tried again, for up to TableHost::kOpenTimeout in all.
  // Nothing on a compute-only node: it holds no shards, and is not asked for any.
  absl::Status CreateShards();
  // Opens the table on every worker thread: waits (up to TableHost::kOpenTimeout) until
  // every member of the configuration has published its shards.
  absl::Status Open();

  TableHost& host() { return *host_; }
  bool open() const { return !clients_.empty(); }
  // After Open; on worker thread t only.
  TableClient& client(size_t t) { return *clients_.at(t); }

 private:
  TableNode(Host& node, std::unique_ptr<TableHost> host) : node_(node), host_(std::move(host)) {}
  Host& node_;
  std::unique_ptr<TableHost> host_;
  std::vector<std::unique_ptr<TableClient>> clients_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_NODE_H_
