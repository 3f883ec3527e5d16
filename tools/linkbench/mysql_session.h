// MysqlSession: one libmariadb connection with what LinkBench's MySQL store needs:
// multi-statement execution (a statement and its `commit` in one round trip, as
// LinkStoreMysql sends them), result rows as strings, escaping, and errors as
// absl::Status. Connected with autocommit off (JDBC's setAutoCommit(false)), latin1.
//
// One thread at a time. Transient errors (deadlock 1213, lock wait timeout 1205) are
// reported as Aborted so callers can roll back and retry, as LinkStoreMysql does.
#ifndef FARM_TOOLS_LINKBENCH_MYSQL_SESSION_H_
#define FARM_TOOLS_LINKBENCH_MYSQL_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

typedef struct st_mysql MYSQL;

namespace farm::linkbench {

struct MysqlAddress {
  std::string host;    // empty with a socket
  unsigned port = 3306;
  std::string socket;  // a unix socket path, or empty
  std::string user = "root";
  std::string password;
  std::string database;  // may be empty
};

class MysqlSession {
 public:
  // Unavailable with the server's message when the connection fails.
  static absl::StatusOr<std::unique_ptr<MysqlSession>> Connect(const MysqlAddress& address);
  ~MysqlSession();

  // The first statement's outcome.
  struct ExecResult {
    uint64_t affected_rows = 0;
    uint64_t insert_id = 0;
    uint64_t matched_rows = 0;  // from mysql_info ("Rows matched: N"), UPDATE only
  };
  // Runs `sql` (possibly several statements) and discards any rows.
  absl::StatusOr<ExecResult> Exec(absl::string_view sql);

  using Row = std::vector<std::optional<std::string>>;
  // Runs `sql`; the rows of the first statement that returns any.
  absl::StatusOr<std::vector<Row>> Query(absl::string_view sql);

  // `bytes` as a quoted SQL string literal.
  std::string Quote(absl::string_view bytes);
  std::string ServerVersion() const;

 private:
  explicit MysqlSession(MYSQL* conn) : conn_(conn) {}
  absl::Status Error(absl::string_view what);
  // Consumes the remaining results of a multi-statement.
  absl::Status Drain();

  MYSQL* conn_;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_MYSQL_SESSION_H_
