// KvCluster: the kv store on an in-process cluster in a test directory
// (kv::LocalKvCluster), of any table layout, with blocking helpers for tests.
#ifndef FARM_TESTS_KV_KV_CLUSTER_H_
#define FARM_TESTS_KV_KV_CLUSTER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "kv/local_kv_cluster.h"

namespace farm::kv::testing {

class KvCluster {
 public:
  // Nodes 1..n with 2 threads, 32 MiB regions and replication r.
  static absl::StatusOr<std::unique_ptr<KvCluster>> Start(const std::string& backend, int nodes,
                                                          const std::string& name, KvTableOptions options,
                                                          uint32_t replication = 3);
  // The hopscotch table.
  static absl::StatusOr<std::unique_ptr<KvCluster>> Start(const std::string& backend, int nodes,
                                                          const std::string& name, TableOptions options,
                                                          uint32_t replication = 3) {
    return Start(backend, nodes, name, KvTableOptions{"hopscotch", std::move(options)}, replication);
  }

  Host& host(NodeId id) { return kv_->host(id); }
  KvClient& client(NodeId id, size_t t = 0) { return kv_->client(id, t); }
  // The layout's own client (a hopscotch TableClient, a linear::LinearClient): the
  // test must know the layout it started.
  template <typename Client>
  Client& client_as(NodeId id, size_t t = 0) { return dynamic_cast<Client&>(kv_->client(id, t)); }
  LocalKvCluster& kv() { return *kv_; }

  absl::Status Put(NodeId on, const std::string& key, const std::string& value);
  absl::StatusOr<std::optional<std::string>> Get(NodeId on, const std::string& key);
  absl::StatusOr<bool> Remove(NodeId on, const std::string& key);
  absl::StatusOr<KeyOpResult> Update(NodeId on, OpKind kind, const std::string& key,
                                     const std::string& value, int64_t delta = 0);
  absl::StatusOr<TableScan> Scan(NodeId on);
  // One page of KvClient::ScanKeys on thread t of node `on`.
  absl::StatusOr<KeyPage> ScanKeys(NodeId on, uint64_t cursor, uint32_t count, size_t t = 0);

 private:
  explicit KvCluster(std::unique_ptr<LocalKvCluster> kv) : kv_(std::move(kv)) {}
  std::unique_ptr<LocalKvCluster> kv_;
};

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_KV_CLUSTER_H_
