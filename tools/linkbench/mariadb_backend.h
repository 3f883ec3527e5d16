// The `mariadb` backend: LinkBench's MySQL store (LinkStoreMysql) on MariaDB through
// libmariadb: its schema (linktable partitioned by id1 into 16, counttable, nodetable,
// InnoDB, latin1) and its statements, each operation one transaction ending in a
// commit sent with the last statement:
//   addLink    INSERT .. ON DUPLICATE KEY UPDATE visibility = VALUES(visibility); by the
//              affected rows (1 new, 0 unchanged visibility, 2 changed) a counttable
//              upsert (+1 / -1) and/or an UPDATE of data, time and version
//   deleteLink SELECT visibility (FOR UPDATE, see README), then UPDATE .. visibility = 0
//              (or DELETE when expunge) and counttable count = IF(count = 0, 0, count - 1)
//   getLinkList  .. visibility = 1 ORDER BY time DESC (, id2 DESC) LIMIT offset, limit
//   countLinks SELECT count FROM counttable
//   load       multi-row INSERTs of 1024 links, REPLACE INTO counttable; nodes by
//              multi-row INSERT into an AUTO_INCREMENT table, TRUNCATE + AUTO_INCREMENT
//              for the id reset
// Deadlocks and lock wait timeouts roll back and retry, as LinkStoreMysql does.
//
// Settings (BackendOptions): with neither mysql_host nor mysql_socket, a private server
// (mariadb_server.h; mariadbd, mariadb_install_db, mysql_buffer_pool = 1G) that lives
// as long as the backend; otherwise that server (mysql_port 3306, mysql_user root,
// mysql_password), where the tables in mysql_db (default linkdb, created if missing)
// are dropped and recreated.
#ifndef FARM_TOOLS_LINKBENCH_MARIADB_BACKEND_H_
#define FARM_TOOLS_LINKBENCH_MARIADB_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "tools/linkbench/backend.h"
#include "tools/linkbench/backend_registry.h"

namespace farm::linkbench {

absl::StatusOr<std::unique_ptr<Backend>> OpenMariadbBackend(const BackendOptions& options);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_MARIADB_BACKEND_H_
