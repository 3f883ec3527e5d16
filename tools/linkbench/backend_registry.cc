#include "tools/linkbench/backend_registry.h"

#include "absl/strings/str_cat.h"
#include "tools/linkbench/mariadb_backend.h"
#include "tools/linkbench/memory_backend.h"

namespace farm::linkbench {

const std::vector<BackendInfo>& Backends() {
  static const std::vector<BackendInfo> kBackends = {
      {"memory", "graph::MemoryGraph under one mutex, in this process (the driver's ceiling)",
       &OpenMemoryBackend},
      {"mariadb",
       "MariaDB with LinkBench's MySQL schema and statements; starts its own mariadbd in a "
       "temporary datadir unless mysql_host or mysql_socket names a running server "
       "(settings: mysql_host, mysql_port, mysql_socket, mysql_user, mysql_password, mysql_db, "
       "mysql_buffer_pool, mariadbd, mariadb_install_db)",
       &OpenMariadbBackend},
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
