// KvTable: a key-value table of some layout on one node process — the layout's handlers
// and this machine's shards, and a KvClient (kv/kv_client.h) for every worker thread.
// The seam between the layouts (kv/table_layouts.h makes one by name) and their users:
// the kv service (kv/resp/kv_service.h), in-process clusters (kv/local_kv_cluster.h),
// YCSB and kv_bench. The same code runs in a farm_node process and in in-process
// clusters, on the node's Host.
//
//   auto table = InstallKvTable(host, options);    // before the node starts
//   ... every machine's node starts ...
//   table->CreateShards();                         // on every machine, then
//   table->Open();                                 // waits for every member's shards
//   table->client(t) ...                           // on worker thread t
//
// Threads: CreateShards, Open and the destructor are called from a thread that is not
// one of the host's worker threads, while the node runs; client(t) is used on worker
// thread t only. The destructor drops each client on its thread.
#ifndef FARM_KV_KV_TABLE_H_
#define FARM_KV_KV_TABLE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "kv/kv_client.h"

namespace farm::kv {

class KvTable {
 public:
  virtual ~KvTable() = default;

  // The layout as it was named (kv/table_layouts.h), e.g. "hopscotch" or "linear:R=8".
  virtual const std::string& layout() const = 0;
  // Allocates this machine's shards and publishes them, once the node has joined the
  // cluster (Host::ready); a failed allocation (Unavailable, DeadlineExceeded, Aborted)
  // is tried again for up to ShardCatalog::kOpenTimeout in all. Nothing on a
  // compute-only node: it holds no shards, and is not asked for any.
  virtual absl::Status CreateShards() = 0;
  // Opens the table on every worker thread: waits (up to ShardCatalog::kOpenTimeout)
  // until every member of the configuration has published its shards.
  virtual absl::Status Open() = 0;
  virtual bool open() const = 0;
  // After Open; on worker thread t only.
  virtual KvClient& client(size_t t) = 0;
};

}  // namespace farm::kv

#endif  // FARM_KV_KV_TABLE_H_
