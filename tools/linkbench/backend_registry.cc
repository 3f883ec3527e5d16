#include "tools/linkbench/backend_registry.h"

#include "absl/strings/str_cat.h"
#include "tools/linkbench/farm_backend.h"
#include "tools/linkbench/graph_resp_backend.h"
#include "tools/linkbench/id_space.h"
#include "tools/linkbench/mariadb_backend.h"
#include "tools/linkbench/memory_backend.h"

namespace farm::linkbench {

namespace {

// The cluster's graph outlives a run: each open gets ids of its own (id_space.h).
absl::StatusOr<std::unique_ptr<Backend>> OpenFarmInFreshIds(const BackendOptions& options) {
  absl::StatusOr<std::unique_ptr<Backend>> b = OpenFarmBackend(options);
  if (!b.ok()) return b;
  return InIdSpace(std::move(*b), FreshIdBase());
}

absl::StatusOr<std::unique_ptr<Backend>> OpenGraphRespInFreshIds(const BackendOptions& options) {
  absl::StatusOr<std::unique_ptr<Backend>> b = OpenGraphRespBackend(options);
  if (!b.ok()) return b;
  return InIdSpace(std::move(*b), FreshIdBase());
}

}  // namespace

const std::vector<BackendInfo>& Backends() {
  static const std::vector<BackendInfo> kBackends = {
      {"memory", "graph::MemoryGraph under one mutex, in this process (the driver's ceiling)",
       &OpenMemoryBackend},
      {"mariadb",
       "MariaDB with LinkBench's MySQL schema and statements; starts its own mariadbd in a "
       "temporary datadir unless mysql_host or mysql_socket names a running server "
       "(settings: mysql_host, mysql_port, mysql_socket, mysql_user, mysql_password, mysql_db, "
       "mysql_buffer_pool, mysql_flush_log_at_trx_commit, mariadbd, mariadb_install_db)",
       &OpenMariadbBackend},
      {"farm",
       "the graph (Tao on FaRM) of a running cluster of farm_node --services=graph, driven by application "
       "threads of this process joined as a compute-only member (settings: zookeeper, cluster, secret_file, "
       "threads, fabric, listen)",
       &OpenFarmInFreshIds},
      {"graph-resp",
       "the same cluster's graph service over RESP (NODE.* / LINK.*, hiredis), one TCP connection per thread, "
       "round-robin over the nodes (settings: graph_resp = host:port,..., graph_resp_timeout_ms)",
       &OpenGraphRespInFreshIds},
  };
  return kBackends;
}

absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& name, const BackendOptions& options) {
  std::string known;
  for (const BackendInfo& info : Backends()) {
    if (name == info.name) return info.open(options);
    absl::StrAppend(&known, known.empty() ? "" : ", ", info.name);
  }
  return absl::NotFoundError(absl::StrCat("unknown backend \"", name, "\" (known: ", known, ")"));
}

}  // namespace farm::linkbench
