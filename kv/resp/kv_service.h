// KvService: the key-value store as a service of a node (farm_node --services=kv, or a
// node of an in-process cluster): the table on this node, of the layout options name
// (kv/table_layouts.h; hopscotch by default), a kv::TableStore per worker thread, and a
// RESP server on the node's worker threads, so every node answers for every key.
//
//   auto kv = KvService::Create(host, options);    // before the node starts
//   ServiceSet services(host); services.Add(std::move(*kv));
//   ... the node starts ...
//   services.StartAll();                           // shards, open, RESP
//   ... redis-cli -p <the port in the log> ...
//   services.StopAll();                            // before the node stops
//
// The table is opened through the cluster's catalog coordinator (kv/table_host.h), so
// every node, including one that joins later, serves the same table. Threads: Create,
// Start and Stop from a thread that is not one of the node's worker threads; Counters
// and OnConfiguration from any thread.
#ifndef FARM_KV_RESP_KV_SERVICE_H_
#define FARM_KV_RESP_KV_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/service.h"
#include "kv/resp/kv_resp_server.h"
#include "kv/kv_table.h"
#include "kv/table_layouts.h"
#include "kv/table_store.h"

namespace farm::kv {

struct KvServiceOptions {
  std::string layout = "hopscotch";  // the table layout (kv/table_layouts.h)
  TableOptions table;
  resp::KvRespOptions resp;  // listen address (loopback by default), AUTH password
};

class KvService final : public Service {
 public:
  static absl::StatusOr<std::unique_ptr<KvService>> Create(Host& host, KvServiceOptions options);
  ~KvService() override;  // Stop()

  std::string name() const override { return "kv"; }
  // Creates this machine's shards, opens the table (waiting up to
  // TableHost::kOpenTimeout for every member's shards), then serves RESP.
  absl::Status Start() override;
  // Stops serving RESP and drops the stores and clients. Idempotent.
  void Stop() override;
  // The RESP server's counters (connections, commands, errors) and the configuration
  // the service last heard.
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;
  void OnConfiguration(uint64_t epoch, const std::vector<NodeId>& members) override;

  uint16_t resp_port() const { return server_ ? server_->port() : 0; }

 private:
  KvService(Host& host, KvServiceOptions options, std::unique_ptr<KvTable> table)
      : host_(host), options_(std::move(options)), table_(std::move(table)) {}

  Host& host_;
  const KvServiceOptions options_;
  std::unique_ptr<KvTable> table_;
  std::vector<std::unique_ptr<TableStore>> stores_;  // per worker thread
  std::unique_ptr<::farm::resp::RespServer> server_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> members_{0};
};

}  // namespace farm::kv

#endif  // FARM_KV_RESP_KV_SERVICE_H_
