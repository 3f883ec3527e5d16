// KvService: the key-value store as a service of a node process (farm_node
// --services=kv): the table on this node (kv/table_node.h), a kv::TableStore per worker
// thread, and a RESP server on the node's loops, so every node answers for every key.
//
//   auto kv = KvService::Install(node, options);   // before node.Start()
//   node.Start();
//   kv->Start();                                   // shards, open, RESP
//   ... redis-cli -p kv->resp_port() ...
//   kv->Stop();                                    // before node.Stop()
//
// Tables are not yet named nor kept in a cluster catalog: each node creates its shards
// at start and opens the table over the members of the configuration it sees then (a
// node that joins later is not part of the table). Threads: every call from a thread
// that is not one of the node's worker threads.
#ifndef FARM_KV_RESP_KV_SERVICE_H_
#define FARM_KV_RESP_KV_SERVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "kv/resp/resp_server.h"
#include "kv/table_node.h"
#include "kv/table_store.h"

namespace farm::kv {

struct KvServiceOptions {
  TableOptions table;
  resp::RespServerOptions resp;  // listen address (loopback by default), AUTH password
};

class KvService {
 public:
  static absl::StatusOr<std::unique_ptr<KvService>> Install(node::Node& node,
                                                            KvServiceOptions options);
  ~KvService();  // Stop()
  KvService(const KvService&) = delete;
  KvService& operator=(const KvService&) = delete;

  // After node.Start(): creates this machine's shards, opens the table (waiting up to
  // TableHost::kOpenTimeout for every member's shards), then serves RESP.
  absl::Status Start();
  uint16_t resp_port() const { return server_ ? server_->port() : 0; }
  // The RESP server's counters (connections, commands, errors); thread-safe, for the
  // admin port. Empty before Start and after Stop.
  std::vector<std::pair<std::string, uint64_t>> Counters() const;
  // Stops serving RESP and drops the stores and clients; before node.Stop(). Idempotent.
  void Stop();

 private:
  KvService(node::Node& node, KvServiceOptions options, std::unique_ptr<TableNode> table)
      : node_(node), options_(std::move(options)), table_(std::move(table)) {}

  node::Node& node_;
  const KvServiceOptions options_;
  std::unique_ptr<TableNode> table_;
  std::vector<std::unique_ptr<TableStore>> stores_;  // per worker thread
  std::unique_ptr<resp::RespServer> server_;
};

}  // namespace farm::kv

#endif  // FARM_KV_RESP_KV_SERVICE_H_
